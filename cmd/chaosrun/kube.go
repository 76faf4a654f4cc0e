package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/google/shlex"
	"github.com/spf13/cobra"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/docker"
	"github.com/chaosrun/chaosrun/harness/kube"
)

// kubeFlags configure the kubernetes runtime.
type kubeFlags struct {
	kubeconfig string
	image      string
	load       string
	stateRoot  string
}

func (k *kubeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.kubeconfig, "kubeconfig", "", "kubernetes runtime: the cluster's kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	fl.StringVar(&k.image, "kube-image", "", "kubernetes runtime: the agent image as the cluster's nodes know it (default: one built by Docker from the running binary, as --runtime docker does)")
	fl.StringVar(&k.load, "kube-load", "", `kubernetes runtime: a command that puts the agent image on the cluster's nodes, run once with the image's name appended (e.g. "kind load docker-image")`)
	fl.StringVar(&k.stateRoot, "kube-state-root", kube.DefaultStateRoot, "kubernetes runtime: the node's folder for the agents' state while an experiment runs")
}

// factory returns a kubernetes runtime per experiment, all on one cluster
// connection and one image: the given one, or one Docker builds from the
// running binary (which must be static: CGO_ENABLED=0 go build), loaded
// into the cluster by --kube-load when given.
func (k *kubeFlags) factory(ctx context.Context, progress io.Writer, logger *slog.Logger) (harness.RuntimeFactory, error) {
	cluster, err := kube.Connect(ctx, k.kubeconfig)
	if err != nil {
		return nil, withCode(exitHarness, fmt.Errorf("--runtime kubernetes: %w", err))
	}
	image := k.image
	if image == "" {
		bin, err := os.Executable()
		if err != nil {
			return nil, withCode(exitHarness, err)
		}
		if image, err = docker.BuildImage(ctx, bin); err != nil {
			return nil, withCode(exitHarness, fmt.Errorf("--runtime kubernetes: the agent image (or give --kube-image): %w", err))
		}
	}
	if err := k.loadImage(ctx, image, progress); err != nil {
		return nil, withCode(exitHarness, err)
	}
	return func(ctx context.Context, runID, experiment string) (agent.Runtime, error) {
		return kube.New(ctx, cluster, kube.Options{RunID: runID, Image: image, ExperimentName: experiment,
			StateRoot: k.stateRoot, Logger: logger})
	}, nil
}

// loadImage runs --kube-load with the image's name appended.
func (k *kubeFlags) loadImage(ctx context.Context, image string, progress io.Writer) error {
	if k.load == "" {
		return nil
	}
	argv, err := shlex.Split(k.load)
	if err != nil || len(argv) == 0 {
		return withCode(exitInvalid, fmt.Errorf("--kube-load: not a command line: %q", k.load))
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], image)...)
	cmd.Stdout, cmd.Stderr = progress, progress
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("--kube-load %s %s: %w", k.load, image, err)
	}
	return nil
}

func newCleanCmd() *cobra.Command {
	var runID, runtime string
	var k kubeFlags
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what an interrupted run left behind: docker containers, networks and volumes, or kubernetes namespaces and their folders on the node",
		Example: `  chaosrun clean
  chaosrun clean --runtime kubernetes --run 20261216-101500-a1b2c3`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch runtime {
			case docker.Name:
				removed, err := docker.Clean(cmd.Context(), runID)
				if err != nil {
					return withCode(exitHarness, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %d containers, %d networks, %d volumes\n",
					removed.Containers, removed.Networks, removed.Volumes)
			case kube.Name:
				cluster, err := kube.Connect(cmd.Context(), k.kubeconfig)
				if err != nil {
					return withCode(exitHarness, err)
				}
				removed, err := kube.Clean(cmd.Context(), cluster, runID)
				fmt.Fprintf(cmd.OutOrStdout(), "removed %d namespaces, the folders of %d experiments\n", removed.Namespaces, removed.Folders)
				if err != nil {
					return withCode(exitHarness, err)
				}
			default:
				return withCode(exitInvalid, errors.New("--runtime: must be docker or kubernetes, got "+runtime))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&runID, "run", "", "only what this run id created (default: everything chaosrun created)")
	cmd.Flags().StringVar(&runtime, "runtime", docker.Name, "whose leftovers: docker or kubernetes")
	cmd.Flags().StringVar(&k.kubeconfig, "kubeconfig", "", "kubernetes: the cluster's kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	return cmd
}

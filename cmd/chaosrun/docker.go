package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/docker"
	"github.com/spf13/cobra"
)

// dockerFlags configure the docker runtime.
type dockerFlags struct {
	image        string
	proxyAPIPort int
}

func (d *dockerFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&d.image, "image", "", "docker runtime: run agents from this image instead of one built from the running binary")
	cmd.Flags().IntVar(&d.proxyAPIPort, "proxy-api-port", 0, "docker runtime: publish the proxy's Toxiproxy API on this port of 127.0.0.1")
}

// factory returns a docker runtime per experiment, all on one image: the
// given one, or one built once from the running binary (which must be
// static: CGO_ENABLED=0 go build).
func (d *dockerFlags) factory(ctx context.Context, logger *slog.Logger) (harness.RuntimeFactory, error) {
	image := d.image
	if image == "" {
		bin, err := os.Executable()
		if err != nil {
			return nil, withCode(exitHarness, err)
		}
		if image, err = docker.BuildImage(ctx, bin); err != nil {
			return nil, withCode(exitHarness, fmt.Errorf("--runtime docker: %w", err))
		}
	}
	var mu sync.Mutex // one runtime at a time may hold a fixed proxy API port
	return func(ctx context.Context, runID, experiment string) (agent.Runtime, error) {
		opts := docker.Options{RunID: runID, Image: image, ExperimentName: experiment, Logger: logger}
		if d.proxyAPIPort != 0 {
			mu.Lock()
			opts.ProxyAPIHostPort = d.proxyAPIPort
			rt, err := docker.New(ctx, opts)
			if err != nil {
				mu.Unlock()
				return nil, err
			}
			return &unlockOnClose{Runtime: rt, unlock: mu.Unlock}, nil
		}
		return docker.New(ctx, opts)
	}, nil
}

// unlockOnClose releases the fixed proxy port when its runtime closes.
type unlockOnClose struct {
	*docker.Runtime
	once   sync.Once
	unlock func()
}

func (u *unlockOnClose) Close() error {
	err := u.Runtime.Close()
	u.once.Do(u.unlock)
	return err
}

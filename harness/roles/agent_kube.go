package roles

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chaosrun/chaosrun/harness/kube/agentside"
	"github.com/chaosrun/chaosrun/internal/exitcode"
)

// newKeeperAgentCmd is the kubernetes runtime's state keeper: one pod per
// experiment that serves the experiment's state folders on the node.
func newKeeperAgentCmd() *cobra.Command {
	var addr, root, owner string
	var remove bool
	cmd := &cobra.Command{
		Use:    "keeper",
		Short:  "Serve an experiment's state folders over HTTP (the kubernetes runtime starts it)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if remove { // what a killed runner left: the keeper's last act, alone
				if err := os.RemoveAll(root); err != nil {
					return exitcode.With(exitcode.Harness, err)
				}
				return nil
			}
			uid, gid, err := parseOwner(owner)
			if err != nil {
				return exitcode.With(exitcode.Invalid, fmt.Errorf("--owner: %w", err))
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return exitcode.With(exitcode.Harness, fmt.Errorf("listen %s: %w", addr, err))
			}
			srv := &http.Server{Handler: (&agentside.Keeper{Root: root, UID: uid, GID: gid}).Handler(), ReadHeaderTimeout: 10 * time.Second}
			announce(cmd, ln)
			stop := context.AfterFunc(cmd.Context(), func() { _ = srv.Close() })
			defer stop()
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return exitcode.With(exitcode.Harness, err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "listen address; the bound URL is printed on stdout's first line")
	cmd.Flags().StringVar(&root, "root", "", "the experiment's folder")
	cmd.Flags().StringVar(&owner, "owner", "", "UID:GID that owns the folders and files the keeper makes (default: the keeper's own)")
	cmd.Flags().BoolVar(&remove, "remove", false, "remove the experiment's folder and exit")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}

func parseOwner(s string) (uid, gid int, err error) {
	if s == "" {
		return -1, -1, nil
	}
	u, g, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("want UID:GID, got %q", s)
	}
	if uid, err = strconv.Atoi(u); err == nil {
		gid, err = strconv.Atoi(g)
	}
	return uid, gid, err
}

// newSignalAgentCmd signals the agent of a pod whose process namespace is
// shared, from inside it: the kubernetes runtime execs it for a crash
// (KILL), a graceful stop (TERM) and a pause (STOP, CONT), and it returns
// once the agent is stopped or gone.
func newSignalAgentCmd() *cobra.Command {
	var wait time.Duration
	cmd := &cobra.Command{
		Use:       "signal KILL|TERM|STOP|CONT",
		Short:     "Signal every process of this pod but process 1 (the kubernetes runtime execs it)",
		Hidden:    true,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"KILL", "TERM", "STOP", "CONT"},
		RunE: func(cmd *cobra.Command, args []string) error {
			sig, ok := agentside.Signals[args[0]]
			if !ok {
				return exitcode.With(exitcode.Invalid, fmt.Errorf("unknown signal %q", args[0]))
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), wait)
			defer cancel()
			n, err := agentside.Signal(ctx, "/proc", os.Getpid(), sig)
			if err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "signalled %d process(es) with SIG%s\n", n, args[0])
			return nil
		},
	}
	cmd.Flags().DurationVar(&wait, "wait", 5*time.Second, "how long to wait for the processes to stop (STOP) or be gone (KILL, TERM)")
	return cmd
}

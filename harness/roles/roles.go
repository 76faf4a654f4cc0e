package roles

import (
	"context"
	"fmt"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/spf13/cobra"
)

// agentFlags are the flags every agent role shares. The runtime sets them.
type agentFlags struct {
	addr      string
	state     string
	parentPID int
	base      string
	verbose   bool
	config    string // the configuration file, relative to state (server and client)
}

func (f *agentFlags) register(cmd *cobra.Command, serves bool) {
	if serves {
		cmd.Flags().StringVar(&f.addr, "addr", "127.0.0.1:0", "listen address; the bound URL is printed on stdout's first line")
	}
	cmd.Flags().StringVar(&f.state, "state", ".", "folder for the agent's files; relative paths in other flags resolve against it")
	cmd.Flags().IntVar(&f.parentPID, "parent-pid", 0, "exit when this process is no longer the parent (set by the local runtime)")
	cmd.Flags().StringVar(&f.base, "base", "", "the run's base clock as Unix nanoseconds (default: now)")
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "debug logging on stderr")
}

// path resolves p against the state folder.
func (f *agentFlags) path(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(f.state, p)
}

func (f *agentFlags) clock() (runclock.Clock, error) {
	if f.base == "" {
		return runclock.Start(), nil
	}
	c, err := runclock.ParseUnixNano(f.base)
	if err != nil {
		return runclock.Clock{}, exitcode.With(exitcode.Invalid, fmt.Errorf("--base: %w", err))
	}
	return c, nil
}

func (f *agentFlags) logger(w io.Writer, role string) *slog.Logger {
	level := slog.LevelInfo
	if f.verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("role", role)
}

// context ends the agent's context when the parent process goes away, so
// an agent never outlives its runner.
func (f *agentFlags) context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if f.parentPID <= 0 {
		return ctx, cancel
	}
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if os.Getppid() != f.parentPID {
					cancel()
					return
				}
			}
		}
	}()
	return ctx, cancel
}

// listen binds the agent's address and announces the URL on stdout.
func (f *agentFlags) listen(cmd *cobra.Command) (net.Listener, error) {
	if err := os.MkdirAll(f.state, 0o755); err != nil {
		return nil, exitcode.With(exitcode.Harness, err)
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, exitcode.With(exitcode.Harness, fmt.Errorf("listen %s: %w", f.addr, err))
	}
	return ln, nil
}

func announce(cmd *cobra.Command, ln net.Listener) {
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s\n", ln.Addr())
}

// Command is the agent command: "agent ROLE", one subcommand per role.
func Command() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent ROLE",
		Short: "Run one agent of an experiment (ledger, server, proxy, client); the runner starts these",
		Long: `Every role of an experiment is this same binary. A serving agent listens on --addr and prints
its bound URL as the first line of stdout, so a parent reads it instead of guessing ports; it
stops gracefully on SIGTERM.`,
	}
	cmd.AddCommand(newLedgerAgentCmd(), newServerAgentCmd(), newProxyAgentCmd(), newClientAgentCmd(), newKeeperAgentCmd(), newSignalAgentCmd())
	return cmd
}

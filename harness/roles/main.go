package roles

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaosrun/chaosrun/internal/exitcode"
)

// RunIfAgent makes this process an agent when it was started as one: with
// os.Args[1] "agent", it runs the role the arguments name until the runtime
// stops it (SIGTERM) and exits with the agent's code; otherwise it returns at
// once. Call it first in main or TestMain.
func RunIfAgent() {
	if len(os.Args) < 2 || os.Args[1] != "agent" {
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := Run(ctx, os.Args[2:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Run runs the agent that args name ("ROLE --flag ...", without "agent")
// and returns its exit code.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := Command()
	cmd.SetArgs(args)
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	return exitcode.Report(stderr, cmd.ExecuteContext(ctx))
}

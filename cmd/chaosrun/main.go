// Command chaosrun runs fault-injection experiments against MCP servers and
// clients that speak the Streamable HTTP transport, and judges them from an
// independent side-effect ledger and recorded histories.
//
// This package is the CLI only: flags, exit codes and progress output. The
// work happens in harness, faults, sideeffects and targets.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes, as documented in the README.
const (
	exitMet          = 0 // every expectation met
	exitNotMet       = 1 // some expectation not met
	exitInconclusive = 2 // some experiment inconclusive where a verdict was expected
	exitInvalid      = 3 // invalid input (experiment files, flags, result folders)
	exitHarness      = 4 // the harness itself failed
	// exitInterrupted is the shell's code for a process ended by SIGINT
	// (128 + 2): the run was interrupted, its results are partial.
	exitInterrupted = 130
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: code, err: err}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // a second Ctrl-C ends the process at once
		if len(os.Args) > 1 && os.Args[1] != "agent" {
			fmt.Fprintln(os.Stderr, "chaosrun: interrupted; keeping what the running experiments recorded (Ctrl-C again to quit at once)")
		}
	}()
	os.Exit(execute(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the CLI and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitMet
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.err.Error() != "" {
			fmt.Fprintln(stderr, "chaosrun:", ee.err)
		}
		return ee.code
	}
	// Errors cobra itself raises (unknown flags, wrong argument counts) are
	// bad input.
	fmt.Fprintln(stderr, "chaosrun:", err)
	return exitInvalid
}

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "chaosrun",
		Short: "Fault-injection chaos harness for MCP Streamable HTTP servers and clients",
		Long: `chaosrun starts an MCP client and server with Toxiproxy between them, injects LB idle
timeouts, resets, partitions, 5xx answers and crashes while long-running tools are in flight,
and judges the run from an independent side-effect ledger: duplicate invocations, silent event
loss, session forks, orphaned results and unresolved outcomes.

Exit codes: 0 every expectation met, 1 some not met, 2 inconclusive, 3 invalid input,
4 the harness itself failed.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newValidateCmd(), newListCmd(), newReportCmd(), newMatrixCmd(), newAgentCmd(), newVersionCmd(), newCleanCmd())
	return root
}

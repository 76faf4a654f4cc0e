// Command chaosrun runs fault-injection experiments against MCP servers and
// clients that speak the Streamable HTTP transport, and judges them from an
// independent side-effect ledger and recorded histories.
//
// This package is the CLI only: flags, exit codes and progress output. The
// work happens in harness, faults, sideeffects and targets.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/spf13/cobra"
)

// Exit codes, as the README documents them.
const (
	exitMet          = exitcode.Met
	exitNotMet       = exitcode.NotMet
	exitInconclusive = exitcode.Inconclusive
	exitInvalid      = exitcode.Invalid
	exitHarness      = exitcode.Harness
	exitInterrupted  = exitcode.Interrupted
)

// withCode carries an exit code through cobra.
func withCode(code int, err error) error { return exitcode.With(code, err) }

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
	return exitcode.Report(stderr, root.ExecuteContext(ctx))
}

// exitCodes closes the help of every command that judges or reads
// experiments.
const exitCodes = `

Exit codes: 0 every expectation met, 1 some not met, 2 inconclusive (a fault never hit), 3 invalid
input (file, line and field named; nothing runs), 4 the harness itself failed, 130 interrupted
(Ctrl-C, SIGTERM; what ran is judged and marked partial).`

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "chaosrun",
		Short: "Fault-injection chaos harness for MCP Streamable HTTP servers and clients",
		Long: `chaosrun starts an MCP client and server with Toxiproxy between them, injects LB idle
timeouts, resets, partitions, 5xx answers and crashes while long-running tools are in flight,
and judges the run from what crossed the wire at both edges of the fault proxy, the server's
side-effect ledger where it writes one, and the clients' histories: duplicate invocations,
silent event loss, session forks, orphaned results and unresolved outcomes. Where the records
cannot prove an invariant either way the verdict says "cannot tell", never guesses.

Exit codes: 0 every expectation met, 1 some not met, 2 inconclusive, 3 invalid input,
4 the harness itself failed, 130 interrupted (Ctrl-C, SIGTERM; the results are partial).`,
		Example: `  chaosrun run experiments/double-charge-lb-idle.yaml   # reproduce the double charge
  chaosrun run experiments/                            # the whole library
  chaosrun report results/<run-id>                     # judge a saved run again, offline`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newRunCmd(), newValidateCmd(), newListCmd(), newReportCmd(), newMatrixCmd(), newMergeCmd(), newProbeCmd(), newExploreCmd(), roles.Command(), newVersionCmd(), newCleanCmd(), newSchemaCmd())
	return root
}

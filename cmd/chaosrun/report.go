package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chaosrun/chaosrun/harness/results"
)

func newReportCmd() *cobra.Command {
	var html bool
	var without []string
	cmd := &cobra.Command{
		Use:   "report DIR",
		Short: "Judge a saved run (or one experiment's folder) again, offline, from its recorded files",
		Long: `Report reads history.jsonl, ledger.jsonl, wire.jsonl, faults.jsonl and timings.json of every experiment
in DIR, judges them again with the checker, compares the result with the saved verdict.json,
and checks it against the experiment's expect: block. Nothing is run and nothing is changed,
except that --html writes each experiment's timeline.html and the run's index.html again.
--without ledger judges every experiment as if its server wrote no ledger (from the wire
alone), --without history as if its client wrote no history; each verdict is then held
against the judgement of every record: the same verdict and the same status for every
invariant, except where the full judgement says the difference lies beyond the wire's sight.
Experiments an interrupted run left are judged from what they recorded and marked partial.
The summary says how many verdicts judged now match their saved verdict.json.` + exitCodes,
		Example: `  chaosrun report results/<run-id>
  chaosrun report --without ledger results/<run-id>   # judge every server from the wire alone
  chaosrun report --html results/<run-id>/double-charge-lb-idle`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return withCode(exitInvalid, fmt.Errorf("report: give one results folder to judge again, as in: chaosrun report results/<run-id> (a run's folder, or one experiment's); got %d", len(args)))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := results.RejudgeWith(args[0], results.RejudgeOptions{Without: without})
			if err != nil {
				return withCode(exitInvalid, err)
			}
			if html {
				if err := results.WriteHTML(run); err != nil {
					return withCode(exitHarness, err)
				}
			}
			return finish(cmd, run, "")
		},
	}
	cmd.Flags().BoolVar(&html, "html", false, "also write each experiment's timeline.html and the run's index.html")
	cmd.Flags().StringSliceVar(&without, "without", nil, "judge without these records (ledger, history, wire): --without ledger judges the server from the wire alone")
	return cmd
}

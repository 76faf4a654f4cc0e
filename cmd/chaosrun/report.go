package main

import (
	"github.com/chaosrun/chaosrun/harness"
	"github.com/spf13/cobra"
)

func newReportCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "report DIR",
		Short: "Judge a saved run (or one experiment's folder) again, offline, from its recorded files",
		Long: `Report reads history.jsonl, ledger.jsonl, faults.jsonl and timings.json of every experiment
in DIR, judges them again with the checker, compares the result with the saved verdict.json,
and checks it against the experiment's expect: block. Nothing is run and nothing is changed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := harness.Rejudge(args[0])
			if err != nil {
				return withCode(exitInvalid, err)
			}
			return finish(cmd, run, "")
		},
	}
}

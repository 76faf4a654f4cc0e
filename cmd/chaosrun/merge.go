package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/chaosrun/chaosrun/harness/matrix"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/spf13/cobra"
)

func newMergeCmd() *cobra.Command {
	var out, junit string
	cmd := &cobra.Command{
		Use:   "merge DIR...",
		Short: "Join the results of several runs (the shards of one, or batches of run --repeat) into one run folder",
		Long: `Merge copies the experiment folders of every run in DIR... (run folders, or folders holding
them such as a shard's --out) into OUT/<run-id>/ and writes its summary.md, junit.xml, run.json
and index.html from the saved results and verdicts, as one run of them all would have; when
every run is a matrix run, matrix.md and matrix.json too. Shards must be every shard of one
count, each once. Runs that each repeated their experiments (run --repeat N, none a shard)
are batches of one longer repetition: their runs are numbered again one after the other, so ten
batches of --repeat 10 merge into one run of every experiment 100 times. The exit code follows
the same rules as run's.` + exitCodes,
		Example: `  chaosrun merge --out results --junit results/junit.xml shards/*`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return withCode(exitInvalid, errors.New("merge: give the results folders to join, as in: chaosrun merge shards/*"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			run, err := results.Merge(out, args)
			if errors.Is(err, results.ErrInvalidResults) {
				return withCode(exitInvalid, err)
			}
			if err != nil {
				return withCode(exitHarness, err)
			}
			if err := joinTables(run); err != nil {
				return withCode(exitHarness, err)
			}
			return finish(cmd, run, junit)
		},
	}
	cmd.Flags().StringVar(&out, "out", "results", "results root; the merged run is written to OUT/<run-id>/")
	cmd.Flags().StringVar(&junit, "junit", "", "also write the JUnit report to this path")
	return cmd
}

// joinTables writes the merged run's matrix table when every run it
// merged was a matrix run.
func joinTables(run *results.Run) error {
	var tables []*matrix.Table
	for _, dir := range run.Merged {
		t, err := matrix.LoadTable(dir)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("merge: %w", err)
		}
		tables = append(tables, t)
	}
	t, err := matrix.Join(tables, run)
	if err == nil {
		err = t.Save(run.Dir)
	}
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chaosrun/chaosrun/harness/matrix"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/spf13/cobra"
)

const defaultMatrix = "experiments/matrix/sdk.yaml"

func newMatrixCmd() *cobra.Command {
	var f runFlags
	var publish string
	cmd := &cobra.Command{
		Use:   "matrix [FILE]",
		Short: "Run fault scenarios across clients x servers (the SDKs included) and tabulate the invariants each pair holds",
		Long: `Matrix composes one experiment per scenario, client and server of a matrix file (default
` + defaultMatrix + `), runs them like 'run' does (each with its own results folder, which
'chaosrun report' can judge again), and writes matrix.md and matrix.json into the run folder.
Each cell's expectation records what the pair does today, so a change in an SDK's behaviour
shows up as an unmet expectation and a non-zero exit code. A matrix file listing protocols
(protocols: [2025-11-25, 2026-07-28]) has a cell per protocol too, keyed client@server@protocol;
a pair that cannot speak a protocol, or a scenario that needs what it lacks (needs:), is not run
and its table says why.

--shard I/N runs the I-th of N shares of the cells (sorted by their experiments' names, every
N-th from the I-th on); its table holds those cells, and 'chaosrun merge' joins the shards'
results and tables.` + exitCodes,
		Example: `  chaosrun matrix -q --parallel 6
  chaosrun matrix --shard 1/2 --out shards/1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := defaultMatrix
			if len(args) == 1 {
				path = args[0]
			}
			o, err := f.overrides(cmd)
			if err != nil {
				return err
			}
			if publish != "" && f.shard != "" {
				return withCode(exitInvalid, errors.New("--publish: a shard's table holds only its share of the cells; publish the whole matrix, without --shard"))
			}
			m, err := matrix.Load(path)
			if errors.Is(err, spec.ErrInvalid) {
				return withCode(exitInvalid, err)
			}
			if err != nil {
				return withCode(exitHarness, err)
			}
			run, err := f.execute(cmd, m.Plans(o))
			if err != nil {
				return err
			}
			shard, _ := f.parsedShard() // checked by overrides
			table, err := matrix.Tabulate(m.Shard(shard), run, implementations())
			if err == nil {
				err = table.Save(run.Dir)
			}
			if err == nil && publish != "" {
				err = copyFile(filepath.Join(run.Dir, matrix.MarkdownFile), publish)
			}
			if err != nil {
				return withCode(exitHarness, err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "matrix: %s\n", filepath.Join(run.Dir, matrix.MarkdownFile))
			return finish(cmd, run, f.junit)
		},
	}
	f.register(cmd)
	cmd.Flags().StringVar(&publish, "publish", "", "also copy matrix.md to this path (e.g. docs/sdk-matrix.md)")
	return cmd
}

// implementations names every implementation a matrix can put under test,
// with its version.
func implementations() map[string]string {
	return map[string]string{
		"reference (server), naive and resumable (clients)": version,
		gosdk.Target: "github.com/modelcontextprotocol/go-sdk " + gosdk.SDKVersion,
		mcpgo.Target: "github.com/mark3labs/mcp-go " + mcpgo.SDKVersion,
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

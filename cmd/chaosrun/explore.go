package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/explore"
	"github.com/spf13/cobra"
)

type exploreFlags struct {
	runs                           int
	forTime                        time.Duration
	parallel                       int
	seed                           int64
	kinds                          []string
	maxFaults                      int
	maxWindow                      time.Duration
	repeats, shrinkRuns, reproduce int
	out                            string
	quiet                          bool
	soak                           time.Duration
}

func newExploreCmd() *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore BASE.yaml (--runs N | --for 30m | --soak 10m)",
		Short: "Draw fault schedules for an experiment's targets and workload, and shrink every violation to a minimal experiment file",
		Long: `Explore takes an experiment (its targets and workload) and runs it under fault schedules drawn
from the whole catalogue: kinds, parameters, times and protocol triggers, several faults
overlapping, within bounds (the file's explore: block, {kinds, max_faults, max_window}, or the
flags). Every run is an ordinary experiment, saved and re-judgeable. On a violation, a harness
error or a crash it shrinks the schedule (fewer faults, shorter windows, earlier times) while the
same invariant stays violated on K runs, writes the minimal schedule as a ready-to-commit
experiment file (expect: set to what it found) under OUT/explore-<id>/findings/, and runs it again
--reproduce times. Distinct findings (different violated invariants) are kept apart. The same seed
draws the same schedules.

--soak D keeps one long workload running instead: the file's calls made again and again for D
(each repeat a new operation), under a random schedule of one fault per four max_window of it,
and reports the server's resident memory, open descriptors (sampled every second, on the local
runtime) and connections at its edge over time, in OUT/soak-<id>/soak.md. Memory that kept
growing and descriptors left open once every call settled are findings, as violations are.

Exit codes: 0 nothing found, 1 some finding, 3 invalid input, 4 the harness failed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return f.run(cmd, args[0]) },
	}
	fl := cmd.Flags()
	fl.IntVar(&f.runs, "runs", 0, "schedules to try")
	fl.DurationVar(&f.forTime, "for", 0, "explore for this long (wall time)")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "experiments run at once")
	fl.Int64Var(&f.seed, "seed", 0, "seed of the schedules (default: the file's seed)")
	fl.StringSliceVar(&f.kinds, "kinds", nil, "fault kinds to draw from (default: the file's explore.kinds, else every kind its targets take)")
	fl.IntVar(&f.maxFaults, "max-faults", 0, "most faults in one schedule (default 3)")
	fl.DurationVar(&f.maxWindow, "max-window", 0, "longest window, idle time or delay drawn, real-world (default 4m)")
	fl.IntVar(&f.repeats, "repeats", 2, "runs a shrink step must violate the same invariant on")
	fl.IntVar(&f.shrinkRuns, "shrink-runs", 40, "runs one shrink may spend")
	fl.IntVar(&f.reproduce, "reproduce", 10, "runs of each minimal file, to count how often it reproduces")
	fl.StringVar(&f.out, "out", "results", "results root; the exploration writes OUT/explore-<id>/")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines")
	fl.DurationVar(&f.soak, "soak", 0, "run one workload this long (wall time) under a random schedule and report the server's memory, descriptors and connections over time")
	cmd.Example = `  chaosrun explore experiments/double-charge-lb-idle.yaml --runs 50
  chaosrun explore base.yaml --for 30m --parallel 2 --seed 7
  chaosrun explore base.yaml --soak 10m`
	return cmd
}

func (f *exploreFlags) run(cmd *cobra.Command, base string) error {
	if f.soak > 0 {
		if f.runs > 0 || f.forTime > 0 {
			return withCode(exitInvalid, errors.New("--soak runs one workload: give it without --runs and --for"))
		}
		return f.runSoak(cmd, base)
	}
	if f.runs <= 0 && f.forTime <= 0 {
		return withCode(exitInvalid, errors.New("give --runs N, --for DURATION or --soak DURATION"))
	}
	if f.parallel < 1 || f.repeats < 1 || f.reproduce < 0 {
		return withCode(exitInvalid, errors.New("--parallel and --repeats must be at least 1, --reproduce at least 0"))
	}
	factory, out, err := f.start("explore")
	if err != nil {
		return err
	}
	o := explore.Options{Base: base, Runs: f.runs, For: f.forTime, Bounds: f.bounds(), Repeats: f.repeats, ShrinkRuns: f.shrinkRuns,
		Reproduce: f.reproduce, Parallel: f.parallel, NewRuntime: factory, RuntimeName: "local", Out: out, Seed: f.seedOf(cmd), Progress: f.progress(cmd)}
	sum, err := explore.Run(cmd.Context(), o)
	if err != nil {
		return failed(err)
	}
	return done(cmd, sum.Markdown(), "explore", sum.Dir, len(sum.Findings), "minimal files in "+filepath.Join(sum.Dir, explore.FindingsDir))
}

func (f *exploreFlags) runSoak(cmd *cobra.Command, base string) error {
	factory, out, err := f.start("soak")
	if err != nil {
		return err
	}
	o := explore.SoakOptions{Base: base, For: f.soak, Bounds: f.bounds(), NewRuntime: factory, RuntimeName: "local", Out: out,
		Seed: f.seedOf(cmd), Progress: f.progress(cmd)}
	sum, err := explore.Soak(cmd.Context(), o)
	if err != nil {
		return failed(err)
	}
	return done(cmd, sum.Markdown(), "soak", sum.Dir, len(sum.Findings), "see "+filepath.Join(sum.Dir, explore.SoakMarkdownFile))
}

// start makes the local runtime and a fresh folder, OUT/<prefix>-<time>.
func (f *exploreFlags) start(prefix string) (harness.RuntimeFactory, string, error) {
	factory, err := harness.LocalRuntime()
	if err != nil {
		return nil, "", withCode(exitHarness, err)
	}
	out := filepath.Join(f.out, prefix+"-"+time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, "", withCode(exitHarness, err)
	}
	return factory, out, nil
}

func (f *exploreFlags) bounds() explore.Bounds {
	return explore.Bounds{Kinds: f.kinds, MaxFaults: f.maxFaults, MaxWindow: f.maxWindow}
}

// seedOf is --seed when given, else nil: the file's seed.
func (f *exploreFlags) seedOf(cmd *cobra.Command) *int64 {
	if cmd.Flags().Changed("seed") {
		return &f.seed
	}
	return nil
}

func (f *exploreFlags) progress(cmd *cobra.Command) io.Writer {
	if f.quiet {
		return nil
	}
	return cmd.ErrOrStderr()
}

// failed gives an exploration's error its exit code: invalid input or a
// harness failure.
func failed(err error) error {
	if errors.Is(err, explore.ErrInput) {
		return withCode(exitInvalid, err)
	}
	return withCode(exitHarness, err)
}

// done prints a finished exploration's summary and its folder; findings
// make exit code 1.
func done(cmd *cobra.Command, markdown, label, dir string, findings int, where string) error {
	fmt.Fprint(cmd.OutOrStdout(), markdown)
	fmt.Fprintf(cmd.OutOrStdout(), "\n%s: %s\n", label, dir)
	if findings > 0 {
		return withCode(exitNotMet, fmt.Errorf("%d finding(s); %s", findings, where))
	}
	return nil
}

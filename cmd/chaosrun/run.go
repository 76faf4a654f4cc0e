package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/spf13/cobra"
)

type runFlags struct {
	out       string
	runtime   string
	parallel  int
	seed      int64
	timeScale float64
	junit     string
	quiet     bool
	verbose   bool
	docker    dockerFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Run experiments (files or folders; default experiments/) and judge them",
		Long: `Run starts each experiment's ledger, server, proxy and client, injects its faults on schedule,
judges the run from the ledger and the histories, and writes results/<run-id>/ (summary.md,
junit.xml, run.json, and a folder per experiment). Every file is validated before anything runs.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			exps, err := loadExperiments(args)
			if err != nil {
				return err
			}
			return f.run(cmd, exps)
		},
	}
	f.register(cmd)
	return cmd
}

// register adds the flags run and matrix share.
func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "results", "results root; the run writes OUT/<run-id>/")
	fl.StringVar(&f.runtime, "runtime", "local", "where agents run: local (child processes) or docker (containers)")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "experiments run at once")
	fl.Int64Var(&f.seed, "seed", 0, "replace every experiment's seed")
	fl.Float64Var(&f.timeScale, "time-scale", 0, "replace every experiment's time_scale")
	fl.StringVar(&f.junit, "junit", "", "also write the JUnit report to this path")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines, only the summary")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "agents log at debug level; progress names every agent's URL and log")
	_ = cmd.RegisterFlagCompletionFunc("runtime", cobra.FixedCompletions(
		[]string{"local\tagents as child processes on 127.0.0.1", "docker\tagents in containers on a private network"},
		cobra.ShellCompDirectiveNoFileComp))
	f.docker.register(cmd)
}

func (f *runFlags) overrides(cmd *cobra.Command) (spec.Overrides, error) {
	var o spec.Overrides
	if cmd.Flags().Changed("seed") {
		o.Seed = &f.seed
	}
	if cmd.Flags().Changed("time-scale") {
		if f.timeScale <= 0 || f.timeScale > 10 {
			return o, withCode(exitInvalid, fmt.Errorf("--time-scale: must be greater than 0 and at most 10, got %v", f.timeScale))
		}
		o.TimeScale = &f.timeScale
	}
	if f.parallel < 1 {
		return o, withCode(exitInvalid, fmt.Errorf("--parallel: must be at least 1, got %d", f.parallel))
	}
	return o, nil
}

func (f *runFlags) run(cmd *cobra.Command, exps []*spec.Experiment) error {
	o, err := f.overrides(cmd)
	if err != nil {
		return err
	}
	plans := make([]*spec.Plan, len(exps))
	for i, x := range exps {
		plans[i] = x.Plan(o)
	}
	run, err := f.execute(cmd, plans)
	if err != nil {
		return err
	}
	return finish(cmd, run, f.junit)
}

// execute runs plans with the flags' runtime, parallelism and output.
func (f *runFlags) execute(cmd *cobra.Command, plans []*spec.Plan) (*harness.Run, error) {
	var problems []spec.Problem
	for _, p := range plans {
		var se *spec.Error
		if errors.As(p.Experiment.CheckRuntime(f.runtime), &se) {
			problems = append(problems, se.Problems...)
		}
	}
	if len(problems) > 0 {
		return nil, withCode(exitInvalid, &spec.Error{Problems: problems})
	}
	factory, err := f.factory(cmd)
	if err != nil {
		return nil, err
	}
	opts := harness.Options{Out: f.out, Runtime: f.runtime, NewRuntime: factory, Parallel: f.parallel,
		Progress: cmd.ErrOrStderr(), Verbose: f.verbose, Terminal: isTerminal(cmd.ErrOrStderr())}
	if f.quiet {
		opts.Progress = nil
	}
	run, err := harness.Execute(cmd.Context(), opts, plans)
	if err != nil {
		return nil, withCode(exitHarness, err)
	}
	return run, nil
}

// factory returns how to make a runtime per experiment.
func (f *runFlags) factory(cmd *cobra.Command) (harness.RuntimeFactory, error) {
	switch f.runtime {
	case "local":
		factory, err := harness.LocalRuntime()
		return factory, withCode(exitHarness, err)
	case "docker":
		logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		return f.docker.factory(cmd.Context(), logger)
	}
	return nil, withCode(exitInvalid, fmt.Errorf("--runtime: must be local or docker, got %q", f.runtime))
}

// finish prints the summary, copies the JUnit report if asked, and turns
// the run's outcome into the exit code.
func finish(cmd *cobra.Command, run *harness.Run, junit string) error {
	if err := harness.WriteSummary(cmd.OutOrStdout(), run); err != nil {
		return withCode(exitHarness, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nresults: %s\n", run.Dir)
	if err := appendStepSummary(run); err != nil {
		return withCode(exitHarness, err)
	}
	if junit != "" {
		b, err := os.ReadFile(filepath.Join(run.Dir, harness.JUnitFile))
		if err == nil {
			err = os.MkdirAll(filepath.Dir(junit), 0o755)
		}
		if err == nil {
			err = os.WriteFile(junit, b, 0o644)
		}
		if err != nil {
			return withCode(exitHarness, fmt.Errorf("--junit: %w", err))
		}
	}
	if errors.Is(cmd.Context().Err(), context.Canceled) {
		return withCode(exitInterrupted, fmt.Errorf("interrupted: the results so far are marked partial in %s; judge them with: chaosrun report %s", run.Dir, run.Dir))
	}
	switch run.Outcome() {
	case harness.HarnessError:
		return withCode(exitHarness, fmt.Errorf("the harness failed on some experiment (see %s)", run.Dir))
	case harness.NotMet:
		return withCode(exitNotMet, fmt.Errorf("some expectations were not met"))
	case harness.Inconclusive:
		return withCode(exitInconclusive, fmt.Errorf("some experiments were inconclusive: their faults never hit"))
	}
	return nil
}

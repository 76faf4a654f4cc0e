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
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/docker"
	"github.com/chaosrun/chaosrun/harness/kube"
	"github.com/chaosrun/chaosrun/harness/local"
	"github.com/chaosrun/chaosrun/harness/results"
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
	shard     string
	repeat    int
	varySeed  bool
	docker    dockerFlags
	kube      kubeFlags
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Run experiments (files or folders; default experiments/) and judge them",
		Long: `Run starts each experiment's ledger, server, proxy and client, injects its faults on schedule,
judges the run from what crossed the wire at both edges, the server's ledger and the clients'
histories, and writes results/<run-id>/ (summary.md,
junit.xml, run.json, and a folder per experiment). Every file is validated before anything runs.

--repeat N runs every experiment N times, each run with its own agents, ports and folder
(<name>.r<k>), on the same seed unless --vary-seed gives run k the seed plus k-1; the summary,
run.json and junit.xml count per experiment the runs that met their expectation and the distinct
outcomes seen, linking every run's folder.

--shard I/N runs the I-th of N shares of the experiments: sorted by name, shard I takes every
N-th from the I-th on, so the shards cover every experiment once and differ in size by at most
one. 'chaosrun merge' joins the shards' results.` + exitCodes,
		Example: `  chaosrun run experiments/double-charge-lb-idle.yaml experiments/silent-loss-evicted-resume.yaml
  chaosrun run --repeat 20 --parallel 2 experiments/reset-storm.yaml
  chaosrun run --runtime docker --out /tmp/results experiments/
  KUBECONFIG=~/.kube/config chaosrun run --runtime kubernetes --kube-load "kind load docker-image" experiments/double-charge-lb-idle.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			exps, err := loadExperimentsFor(args, f.runtime)
			if err != nil {
				return err
			}
			return f.run(cmd, exps)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&f.repeat, "repeat", 1, "run every experiment this many times and count how often it meets its expectation")
	cmd.Flags().BoolVar(&f.varySeed, "vary-seed", false, "with --repeat, run k uses the seed plus k-1 (another fault schedule each run)")
	return cmd
}

// register adds the flags run and matrix share.
func (f *runFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.out, "out", "results", "results root; the run writes OUT/<run-id>/")
	fl.StringVar(&f.runtime, "runtime", "local", "where agents run: local (child processes), docker (containers) or kubernetes (pods)")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "experiments run at once")
	fl.Int64Var(&f.seed, "seed", 0, "replace every experiment's seed")
	fl.Float64Var(&f.timeScale, "time-scale", 0, "replace every experiment's time_scale")
	fl.StringVar(&f.junit, "junit", "", "also write the JUnit report to this path")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines, only the summary")
	fl.BoolVarP(&f.verbose, "verbose", "v", false, "agents log at debug level; progress names every agent's URL and log")
	fl.StringVar(&f.shard, "shard", "", "run only share I of N of the experiments (I/N, as in 2/4): sorted by name, every N-th from the I-th")
	_ = cmd.RegisterFlagCompletionFunc("runtime", cobra.FixedCompletions(
		[]string{"local\tagents as child processes on 127.0.0.1", "docker\tagents in containers on a private network",
			"kubernetes\tagents as pods in a namespace per experiment"},
		cobra.ShellCompDirectiveNoFileComp))
	f.docker.register(cmd)
	f.kube.register(cmd)
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
	if cmd.Flags().Changed("repeat") && f.repeat < 1 {
		return o, withCode(exitInvalid, fmt.Errorf("--repeat: must be at least 1, got %d", f.repeat))
	}
	if f.varySeed && f.repeat < 2 {
		return o, withCode(exitInvalid, errors.New("--vary-seed: varies the seed from one repetition to the next; give --repeat N with N of 2 or more"))
	}
	if _, err := f.parsedShard(); err != nil {
		return o, err
	}
	return o, nil
}

// parsedShard is --shard, the whole set when it is not given.
func (f *runFlags) parsedShard() (results.Shard, error) {
	if f.shard == "" {
		return results.Shard{}, nil
	}
	s, err := results.ParseShard(f.shard)
	if err != nil {
		return s, withCode(exitInvalid, fmt.Errorf("--shard: %w", err))
	}
	return s, nil
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

// execute runs the flags' shard of plans with their runtime, parallelism
// and output.
func (f *runFlags) execute(cmd *cobra.Command, all []*spec.Plan) (*results.Run, error) {
	shard, _ := f.parsedShard() // checked by overrides
	plans := shard.Select(all)
	var problems []spec.Problem
	if caps, ok := runtimeCapabilities(f.runtime); ok {
		for _, p := range all { // every shard validates all, so all agree
			var se *spec.Error
			if errors.As(p.Experiment.CheckRuntime(caps, knownRuntimes()), &se) {
				problems = append(problems, se.Problems...)
			}
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
		Progress: cmd.ErrOrStderr(), Verbose: f.verbose, Terminal: isTerminal(cmd.ErrOrStderr()),
		Repeat: f.repeat, VarySeed: f.varySeed, Shard: shard}
	if f.quiet {
		opts.Progress = nil
	}
	if !shard.Whole() && len(plans) == 0 {
		fmt.Fprintf(cmd.ErrOrStderr(), "chaosrun: shard %s holds none of the %d experiments; it records an empty run\n", shard, len(all))
	}
	run, err := harness.Execute(cmd.Context(), opts, plans)
	if err != nil {
		return nil, withCode(exitHarness, err)
	}
	return run, nil
}

// knownRuntimes are what each runtime --runtime names can run, so that an
// experiment is checked against its runtime before any runtime is made.
func knownRuntimes() []agent.Capabilities {
	return []agent.Capabilities{local.Capabilities(), docker.Capabilities(), kube.Capabilities()}
}

// runtimeCapabilities are the capabilities of the runtime named name.
func runtimeCapabilities(name string) (agent.Capabilities, bool) {
	for _, c := range knownRuntimes() {
		if c.Runtime == name {
			return c, true
		}
	}
	return agent.Capabilities{}, false
}

// factory returns how to make a runtime per experiment.
func (f *runFlags) factory(cmd *cobra.Command) (harness.RuntimeFactory, error) {
	switch f.runtime {
	case local.Name:
		factory, err := harness.LocalRuntime()
		return factory, withCode(exitHarness, err)
	case docker.Name:
		logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
		return f.docker.factory(cmd.Context(), logger)
	case kube.Name:
		level := slog.LevelWarn
		if f.verbose { // where an experiment's time goes: pods, namespaces
			level = slog.LevelDebug
		}
		logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level}))
		return f.kube.factory(cmd.Context(), cmd.ErrOrStderr(), logger)
	}
	return nil, withCode(exitInvalid, fmt.Errorf("--runtime: must be local, docker or kubernetes, got %q", f.runtime))
}

// finish prints the summary, copies the JUnit report if asked, and turns
// the run's outcome into the exit code.
func finish(cmd *cobra.Command, run *results.Run, junit string) error {
	if err := results.WriteSummary(cmd.OutOrStdout(), run); err != nil {
		return withCode(exitHarness, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nresults: %s\n", run.Dir)
	if err := appendStepSummary(run); err != nil {
		return withCode(exitHarness, err)
	}
	if junit != "" {
		b, err := os.ReadFile(filepath.Join(run.Dir, results.JUnitFile))
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
	case results.HarnessError:
		return withCode(exitHarness, fmt.Errorf("the harness failed on some experiment (see %s)", run.Dir))
	case results.NotMet:
		return withCode(exitNotMet, fmt.Errorf("some expectations were not met"))
	case results.Inconclusive:
		return withCode(exitInconclusive, fmt.Errorf("some experiments were inconclusive: their faults never hit"))
	}
	return nil
}

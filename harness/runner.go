package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

// RuntimeFactory makes a fresh runtime for one experiment of a run, so
// experiments running in parallel share nothing.
type RuntimeFactory func(ctx context.Context, runID, experiment string) (agent.Runtime, error)

// Options configure a run.
type Options struct {
	// Out is the results root; the run writes Out/<run-id>/.
	Out string
	// Runtime names the runtime for the record (local, docker).
	Runtime    string
	NewRuntime RuntimeFactory
	// Parallel is how many experiments run at once (at least 1).
	Parallel int
	// Progress receives one line per step, fault and verdict; nil discards.
	Progress io.Writer
	// Verbose has agents log at debug level and progress name every
	// agent's URL and log.
	Verbose bool
	// Terminal says Progress is a terminal: a status line of the whole run
	// (experiments done, the time left) is kept under the progress lines.
	Terminal bool
	// Repeat runs every plan this many times (0 and 1: once), each
	// repetition in a folder of its own with its own agents and ports.
	Repeat int
	// VarySeed gives repetition k the plan's seed plus k-1 (a new fault
	// schedule each time); without it every repetition uses the plan's seed.
	VarySeed bool
	// Shard is the share of a larger set the plans are, for the record
	// (results.Shard.Select makes the share).
	Shard results.Shard
}

// Execute runs the plans and writes the results folder. It returns an error
// only when the results folder itself cannot be written; failures of single
// experiments are in their results. A cancelled ctx interrupts the run: what
// the running experiments recorded is kept, judged and marked partial.
//
// Without Options.NewRuntime, agents run on the local runtime as child
// processes of this very executable, started with "agent ROLE ...": a test
// binary serves as them when its TestMain calls roles.RunIfAgent.
func Execute(ctx context.Context, opts Options, plans []*spec.Plan) (*results.Run, error) {
	if opts.NewRuntime == nil {
		f, err := LocalRuntime()
		if err != nil {
			return nil, err
		}
		opts.NewRuntime, opts.Runtime = f, cmp.Or(opts.Runtime, "local")
	}
	run := &results.Run{ID: results.NewRunID(), Runtime: opts.Runtime, Parallel: max(opts.Parallel, 1), Started: time.Now(),
		Shard: opts.Shard.String()}
	if opts.Repeat > 1 {
		run.Repeat = opts.Repeat
	}
	run.Dir = filepath.Join(opts.Out, run.ID)
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	jobs := expand(plans, opts.Repeat, opts.VarySeed)
	expanded := make([]*spec.Plan, len(jobs))
	for i, j := range jobs {
		expanded[i] = j.plan
	}
	prog := newProgress(opts.Progress, opts.Terminal, expanded, run.Parallel)
	for i, j := range jobs {
		prog.names[i] = j.folder()
	}
	run.Results = make([]*results.ExperimentResult, len(jobs))
	sem := make(chan struct{}, run.Parallel)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			prog.start(i)
			run.Results[i] = runOne(ctx, opts, run, j, prog)
			prog.done(i, run.Results[i].Wall)
		})
	}
	wg.Wait()
	prog.close()
	run.WallMS = time.Since(run.Started).Milliseconds()
	run.Interrupted = errors.Is(ctx.Err(), context.Canceled)
	return run, results.WriteReports(run)
}

// job is one run of one plan: its repetition (0 when the plan runs once).
type job struct {
	plan       *spec.Plan
	repetition int
	width      int // digits of the repetition in folder names
}

// expand lists the runs of plans, each plan's repetitions together.
func expand(plans []*spec.Plan, repeat int, varySeed bool) []job {
	if repeat <= 1 {
		jobs := make([]job, len(plans))
		for i, p := range plans {
			jobs[i] = job{plan: p}
		}
		return jobs
	}
	width := len(fmt.Sprint(repeat))
	var jobs []job
	for _, p := range plans {
		for k := 1; k <= repeat; k++ {
			q := p
			if varySeed {
				seed, scale := p.Seed+int64(k-1), p.TimeScale
				q = p.Experiment.Plan(spec.Overrides{Seed: &seed, TimeScale: &scale})
			}
			jobs = append(jobs, job{plan: q, repetition: k, width: width})
		}
	}
	return jobs
}

// folder names the run's results folder within the run's: the experiment's
// name, and for a repetition ".r" and its number (a dot, which names never
// hold, so no experiment's folder can be mistaken for another's).
func (j job) folder() string {
	if j.repetition == 0 {
		return j.plan.Experiment.Name
	}
	return fmt.Sprintf("%s.r%0*d", j.plan.Experiment.Name, j.width, j.repetition)
}

func runOne(ctx context.Context, opts Options, run *results.Run, j job, prog *progress) *results.ExperimentResult {
	p, name, folder := j.plan, j.plan.Experiment.Name, j.folder()
	dir := filepath.Join(run.Dir, folder)
	clock := runclock.Start()
	say := func(format string, args ...any) { prog.say(folder, clock, format, args...) }
	fail := func(err error) *results.ExperimentResult {
		say("harness error: %v", err)
		return &results.ExperimentResult{Name: name, Repetition: j.repetition, Seed: p.Seed, Dir: dir, Expected: p.Expect.Verdict,
			Error: err.Error(), Wall: clock.Now()}
	}
	if ctx.Err() != nil {
		return fail(fmt.Errorf("not started: %w", context.Cause(ctx)))
	}
	rt, err := opts.NewRuntime(ctx, run.ID, folder)
	if err != nil {
		return fail(fmt.Errorf("runtime: %w", err))
	}
	e := &experiment{plan: p, dir: dir, rt: rt, clock: clock, progress: say, verbose: opts.Verbose}
	res, err := e.run(ctx)
	if err != nil {
		if ctx.Err() != nil && !errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("interrupted: %w", err)
		}
		return fail(err)
	}
	res.Repetition, res.Seed = j.repetition, p.Seed
	mark := "met"
	if !res.Met {
		mark = "NOT met: " + joinReasons(res.Reasons)
	}
	say("verdict %s (expected %s): %s", res.Verdict.Verdict, res.Expected, mark)
	return res
}

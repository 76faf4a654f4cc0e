package harness

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
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
	// (Shard.Select makes the share).
	Shard Shard
}

// Run is the outcome of one invocation over a set of experiments.
type Run struct {
	ID       string `json:"id"`
	Dir      string `json:"dir"`
	Runtime  string `json:"runtime"`
	Parallel int    `json:"parallel"`
	// Repeat is how many times each experiment was asked to run; the
	// counts of what happened are in Tallies, from the results themselves.
	Repeat int `json:"repeat,omitempty"`
	// Shard is the share of the experiments this run took ("2/4"), empty
	// for all of them.
	Shard string `json:"shard,omitempty"`
	// Merged names the run folders a merged run joins (see Merge).
	Merged  []string  `json:"merged,omitempty"`
	Started time.Time `json:"started"`
	WallMS  int64     `json:"wall_ms"`
	// Interrupted is set when the run was cancelled (Ctrl-C, SIGTERM)
	// before every experiment finished.
	Interrupted bool                `json:"interrupted,omitempty"`
	Results     []*ExperimentResult `json:"experiments"`
	// Tallies counts, experiment by experiment, the runs that met their
	// expectation and the outcomes seen, when some experiment ran more
	// than once (see Run.TallyRuns); it is written from Results.
	Tallies []Tally `json:"tallies,omitempty"`
}

// ExperimentResult is one experiment's outcome. Verdict is nil when the
// harness failed (Error says why).
type ExperimentResult struct {
	Name string `json:"name"`
	// Repetition numbers the runs of a repeated experiment from 1; 0 when
	// it ran once.
	Repetition int            `json:"repetition,omitempty"`
	Seed       int64          `json:"seed"`
	Dir        string         `json:"dir"`
	Expected   string         `json:"expected"`
	Verdict    *check.Verdict `json:"-"`
	Met        bool           `json:"met"`
	Reasons    []string       `json:"reasons,omitempty"`
	Error      string         `json:"error,omitempty"`
	// Partial says why the experiment's records are incomplete (see
	// PartialFile); empty when they are whole.
	Partial   string        `json:"partial,omitempty"`
	Wall      time.Duration `json:"-"`
	Scheduled time.Duration `json:"-"`
	// Saved, for an experiment judged again offline, says how the verdict
	// judged now compares with its saved verdict.json (SavedSame,
	// SavedDiffers, SavedAbsent); empty when nothing was compared.
	Saved string `json:"-"`
}

// How a verdict judged again compares with the saved one
// (ExperimentResult.Saved).
const (
	SavedSame    = "same"
	SavedDiffers = "differs"
	SavedAbsent  = "absent"
)

// Label names the result in tables: the experiment's name, and for a
// repetition its number ("reset-storm #3").
func (x *ExperimentResult) Label() string {
	if x.Repetition == 0 {
		return x.Name
	}
	return fmt.Sprintf("%s #%d", x.Name, x.Repetition)
}

// Outcome classifies a run for its exit code.
type Outcome int

// Outcomes, from best to worst.
const (
	AllMet       Outcome = iota // every expectation met
	Inconclusive                // some experiment was inconclusive where a verdict was expected
	NotMet                      // some expectation not met
	HarnessError                // the harness failed on some experiment
)

// Outcome is the worst outcome of the run's experiments.
func (r *Run) Outcome() Outcome {
	worst := AllMet
	for _, x := range r.Results {
		o := AllMet
		switch {
		case x.Verdict == nil:
			o = HarnessError
		case x.Met:
		case x.Partial != "": // cut short: the verdict says nothing of the fault
			o = NotMet
		case x.Verdict.Verdict == check.Inconclusive:
			o = Inconclusive
		default:
			o = NotMet
		}
		worst = max(worst, o)
	}
	return worst
}

// Execute runs the plans and writes the results folder. It returns an error
// only when the results folder itself cannot be written; failures of single
// experiments are in their results. A cancelled ctx interrupts the run: what
// the running experiments recorded is kept, judged and marked partial.
//
// Without Options.NewRuntime, agents run on the local runtime as child
// processes of this very executable, started with "agent ROLE ...": a test
// binary serves as them when its TestMain calls roles.RunIfAgent.
func Execute(ctx context.Context, opts Options, plans []*spec.Plan) (*Run, error) {
	if opts.NewRuntime == nil {
		f, err := LocalRuntime()
		if err != nil {
			return nil, err
		}
		opts.NewRuntime, opts.Runtime = f, cmp.Or(opts.Runtime, "local")
	}
	run := &Run{ID: newRunID(), Runtime: opts.Runtime, Parallel: max(opts.Parallel, 1), Started: time.Now(),
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
	run.Results = make([]*ExperimentResult, len(jobs))
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
	return run, writeReports(run)
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

func runOne(ctx context.Context, opts Options, run *Run, j job, prog *progress) *ExperimentResult {
	p, name, folder := j.plan, j.plan.Experiment.Name, j.folder()
	dir := filepath.Join(run.Dir, folder)
	clock := runclock.Start()
	say := func(format string, args ...any) { prog.say(folder, clock, format, args...) }
	fail := func(err error) *ExperimentResult {
		say("harness error: %v", err)
		return &ExperimentResult{Name: name, Repetition: j.repetition, Seed: p.Seed, Dir: dir, Expected: p.Expect.Verdict,
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

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

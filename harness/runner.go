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
}

// Run is the outcome of one invocation over a set of experiments.
type Run struct {
	ID       string    `json:"id"`
	Dir      string    `json:"dir"`
	Runtime  string    `json:"runtime"`
	Parallel int       `json:"parallel"`
	Started  time.Time `json:"started"`
	WallMS   int64     `json:"wall_ms"`
	// Interrupted is set when the run was cancelled (Ctrl-C, SIGTERM)
	// before every experiment finished.
	Interrupted bool                `json:"interrupted,omitempty"`
	Results     []*ExperimentResult `json:"experiments"`
}

// ExperimentResult is one experiment's outcome. Verdict is nil when the
// harness failed (Error says why).
type ExperimentResult struct {
	Name     string         `json:"name"`
	Dir      string         `json:"dir"`
	Expected string         `json:"expected"`
	Verdict  *check.Verdict `json:"-"`
	Met      bool           `json:"met"`
	Reasons  []string       `json:"reasons,omitempty"`
	Error    string         `json:"error,omitempty"`
	// Partial says why the experiment's records are incomplete (see
	// PartialFile); empty when they are whole.
	Partial   string        `json:"partial,omitempty"`
	Wall      time.Duration `json:"-"`
	Scheduled time.Duration `json:"-"`
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
	run := &Run{ID: newRunID(), Runtime: opts.Runtime, Parallel: max(opts.Parallel, 1), Started: time.Now()}
	run.Dir = filepath.Join(opts.Out, run.ID)
	if err := os.MkdirAll(run.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("results folder: %w", err)
	}
	prog := newProgress(opts.Progress, opts.Terminal, plans, run.Parallel)
	run.Results = make([]*ExperimentResult, len(plans))
	sem := make(chan struct{}, run.Parallel)
	var wg sync.WaitGroup
	for i, p := range plans {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			prog.start(i)
			run.Results[i] = runOne(ctx, opts, run, p, prog)
			prog.done(i, run.Results[i].Wall)
		})
	}
	wg.Wait()
	prog.close()
	run.WallMS = time.Since(run.Started).Milliseconds()
	run.Interrupted = errors.Is(ctx.Err(), context.Canceled)
	return run, writeReports(run)
}

func runOne(ctx context.Context, opts Options, run *Run, p *spec.Plan, prog *progress) *ExperimentResult {
	name := p.Experiment.Name
	dir := filepath.Join(run.Dir, name)
	clock := runclock.Start()
	say := func(format string, args ...any) { prog.say(name, clock, format, args...) }
	fail := func(err error) *ExperimentResult {
		say("harness error: %v", err)
		return &ExperimentResult{Name: name, Dir: dir, Expected: p.Expect.Verdict, Error: err.Error(), Wall: clock.Now()}
	}
	if ctx.Err() != nil {
		return fail(fmt.Errorf("not started: %w", context.Cause(ctx)))
	}
	rt, err := opts.NewRuntime(ctx, run.ID, name)
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

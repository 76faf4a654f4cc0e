// Package lab runs generated experiments: the batteries of `chaosrun probe`
// and the schedules of `chaosrun explore`. A generated experiment is an
// ordinary experiment, validated by package spec, run by the harness in a
// run folder of its own, judged by the checker, and saved: once it has
// run, its experiment.yaml carries the verdict it reached as its expect:
// block, so `chaosrun report` judges it again from its records and says
// whether they still give that verdict. [Lab.Finish] joins every run into
// one run folder (results.Merge) with one summary, JUnit report and index.
//
// What a caller measures comes from an [Outcome]: the records the run
// wrote (wire.jsonl, ledger.jsonl, faults.jsonl) and the verdict, never the
// experiment's configuration.
package lab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// ExperimentsDir is the folder, within a lab's output folder, that holds
// every experiment it ran once [Lab.Finish] has joined them.
const ExperimentsDir = "experiments"

// runsDir holds the run folders until Finish joins them.
const runsDir = "runs"

// Lab runs generated experiments at most Parallel at a time and keeps
// their results under Out.
type Lab struct {
	// Out is the lab's output folder.
	Out string
	// Parallel bounds the experiments running at once (at least 1).
	Parallel int
	// NewRuntime makes each experiment's runtime; nil is the local runtime.
	NewRuntime harness.RuntimeFactory
	// RuntimeName names the runtime for the record.
	RuntimeName string
	// Verbose has agents log at debug level.
	Verbose bool

	once  sync.Once
	sem   chan struct{}
	mu    sync.Mutex
	names map[string]int
	ran   int
}

// Outcome is what one generated experiment recorded and how it was judged.
type Outcome struct {
	Experiment *Experiment
	// Folder is the experiment's folder name; Dir its results folder,
	// under ExperimentsDir once the lab is finished.
	Folder string
	Dir    string
	// Verdict is the checker's; nil when the harness failed (Error says
	// why).
	Verdict *check.Verdict
	Error   string
	Wire    []wire.Record
	Ledger  []sideeffects.Record
	Faults  []faults.Entry
	// History is what chaosrun's own client recorded (none for a client
	// of the user's own).
	History []history.Record
	Wall    time.Duration
}

// Judged reports whether the experiment ran and was judged.
func (o *Outcome) Judged() bool { return o.Verdict != nil }

// Violated reports whether the verdict names the invariant violated.
func (o *Outcome) Violated(id string) bool {
	return o.Verdict != nil && slices.Contains(o.Verdict.Violations, id)
}

// Ran is how many experiments the lab has run.
func (l *Lab) Ran() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ran
}

// unique returns name, or name with a number when the lab already ran an
// experiment of that name.
func (l *Lab) unique(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names == nil {
		l.names = map[string]int{}
	}
	l.names[name]++
	if n := l.names[name]; n > 1 {
		return fmt.Sprintf("%s-%d", name, n)
	}
	return name
}

// Run runs one generated experiment and returns what it recorded. Its
// name is made unique within the lab. An error means the experiment could
// not be written or parsed (a defect of the generator) or the results
// folder could not be written; a harness failure inside the experiment is
// in Outcome.Error.
func (l *Lab) Run(ctx context.Context, x *Experiment) (*Outcome, error) {
	l.once.Do(func() { l.sem = make(chan struct{}, max(l.Parallel, 1)) })
	x.Name = l.unique(x.Name)
	if x.Expect.Verdict == "" {
		x.Expect = Expect{Verdict: check.Inconclusive}
	}
	parsed, err := x.Parse()
	if err != nil {
		return nil, fmt.Errorf("lab: generated experiment %s: %w", x.Name, err)
	}
	select {
	case l.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-l.sem }()
	opts := harness.Options{Out: filepath.Join(l.Out, runsDir), Runtime: l.RuntimeName, NewRuntime: l.NewRuntime,
		Parallel: 1, Verbose: l.Verbose}
	run, err := harness.Execute(ctx, opts, []*spec.Plan{parsed.Plan(spec.Overrides{})})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	l.mu.Lock()
	l.ran++
	l.mu.Unlock()
	res := run.Results[0]
	o := &Outcome{Experiment: x, Folder: filepath.Base(res.Dir), Dir: res.Dir, Verdict: res.Verdict, Error: res.Error, Wall: res.Wall}
	if res.Verdict == nil {
		o.Wire, o.Faults = partialRecords(res.Dir)
		return o, nil
	}
	in, err := check.LoadRun(res.Dir)
	if err != nil {
		o.Error = err.Error()
		return o, nil
	}
	o.Wire, o.Ledger, o.Faults, o.History = in.Wire, in.Ledger, in.Faults, in.History
	return o, keepFound(run, x)
}

// keepFound saves the experiment with the verdict it reached as its
// expectation, in its experiment.yaml and in the run's run.json, so the run
// reads as met and a later judgement says whether its records still give
// that verdict. A verdict no experiment may expect (workload_error) is left
// unmet.
func keepFound(run *results.Run, x *Experiment) error {
	res := run.Results[0]
	switch res.Verdict.Verdict {
	case check.Pass, check.Fail, check.Inconclusive:
	default:
		return nil
	}
	x.Found(*res.Verdict)
	b, err := x.YAML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(res.Dir, results.ExperimentFile), b, 0o644); err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	res.Expected, res.Met, res.Reasons = res.Verdict.Verdict, true, nil
	if res.Partial != "" { // an interrupted run meets nothing
		res.Met, res.Reasons = false, []string{res.Partial}
	}
	out, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return os.WriteFile(filepath.Join(run.Dir, results.RunFile), append(out, '\n'), 0o644)
}

// Finish joins every run the lab made into one run folder, Out/ExperimentsDir,
// and points the outcomes' Dir there. With nothing run it does nothing.
func (l *Lab) Finish(outcomes []*Outcome) (*results.Run, error) {
	runs := filepath.Join(l.Out, runsDir)
	if _, err := os.Stat(runs); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	tmp := filepath.Join(l.Out, ".merge")
	merged, err := results.Merge(tmp, []string{runs})
	if err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	final := filepath.Join(l.Out, ExperimentsDir)
	if err := os.RemoveAll(final); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := os.Rename(merged.Dir, final); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	if err := errors.Join(os.RemoveAll(tmp), os.RemoveAll(runs)); err != nil {
		return nil, fmt.Errorf("lab: %w", err)
	}
	merged.Dir = final
	for _, r := range merged.Results {
		r.Dir = filepath.Join(final, filepath.Base(r.Dir))
	}
	for _, o := range outcomes {
		if o != nil {
			o.Dir = filepath.Join(final, o.Folder)
		}
	}
	return merged, rewriteRun(merged)
}

// rewriteRun saves run.json again with the folders where they now are.
func rewriteRun(run *results.Run) error {
	b, err := json.MarshalIndent(run, "", "  ")
	if err != nil {
		return fmt.Errorf("lab: %w", err)
	}
	return os.WriteFile(filepath.Join(run.Dir, results.RunFile), append(b, '\n'), 0o644)
}

// Say writes one progress line, when w is not nil.
func Say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// partialRecords reads what a run the harness failed on left: the wire
// record in the proxy's state folder (the runner collects it only at the
// end) and the fault log. A run cut short still shows what crossed the
// wire before it was.
func partialRecords(dir string) ([]wire.Record, []faults.Entry) {
	recs, err := wire.Load(filepath.Join(dir, wire.File))
	if err != nil {
		recs, _ = wire.Load(filepath.Join(dir, "state", "proxy", wire.File))
	}
	log, _ := faults.LoadLog(filepath.Join(dir, check.FaultsFile))
	return recs, log
}

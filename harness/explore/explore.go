// Package explore searches fault schedules nobody wrote: it takes an
// experiment's targets and workload, draws schedules from the fault
// catalogue (kinds, parameters, times and protocol triggers, several faults
// overlapping, within [Bounds]), runs each as an ordinary experiment
// (package lab: saved, judged, re-judgeable), and on a violation, a harness
// error or a crash shrinks the schedule: fewer faults, shorter windows,
// earlier times, keeping a step only while the same invariant stays
// violated on every one of K runs. The minimal schedule is written as a
// ready-to-commit experiment file with expect: set to what it found, and
// run again to count how often it reproduces. Findings that violate
// different invariants are kept apart. The same seed draws the same
// schedules, and a shrink tries its candidates in a fixed order, so the
// same seed shrinks the same way when the targets behave the same.
package explore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
	"gopkg.in/yaml.v3"
)

// Options configure an exploration.
type Options struct {
	// Base is the experiment file whose targets and workload are explored;
	// its faults and expect: are replaced, and its explore: block, if
	// any, sets the bounds (Bounds fields given here win).
	Base string
	// Runs bounds the schedules tried; For bounds the exploration's wall
	// time (one of them, or both).
	Runs int
	For  time.Duration
	// Seed draws the schedules (default: the base's seed).
	Seed *int64
	// Bounds limit what is drawn.
	Bounds Bounds
	// Repeats is K, the runs a shrink step must violate the same invariant
	// on (default 2); ShrinkRuns bounds the runs one shrink spends
	// (default 40); Reproduce is how often the minimal file is run again
	// (default 10).
	Repeats, ShrinkRuns, Reproduce int
	// Out is the exploration's folder; Parallel bounds the experiments
	// running at once.
	Out      string
	Parallel int
	// NewRuntime and RuntimeName choose the runtime (nil: local).
	NewRuntime  harness.RuntimeFactory
	RuntimeName string
	Progress    io.Writer
}

// ErrInput marks a base experiment or bounds explore cannot run with.
var ErrInput = errors.New("invalid explore input")

// Summary is a finished exploration.
type Summary struct {
	Base     string    `json:"base"`
	Seed     int64     `json:"seed"`
	Bounds   Bounds    `json:"bounds"`
	Runs     int       `json:"runs"`     // schedules tried
	Clean    int       `json:"clean"`    // of them, without a finding
	AllRuns  int       `json:"all_runs"` // every experiment, shrinks and reproductions included
	Findings []Finding `json:"findings"`
	Started  time.Time `json:"started"`
	WallMS   int64     `json:"wall_ms"`
	Dir      string    `json:"dir"`
}

// Finding is one distinct violation, shrunk.
type Finding struct {
	// Key is what keeps findings apart: the violated invariants, or
	// harness_error.
	Key        string   `json:"key"`
	Violations []string `json:"violations"`
	// Run is the schedule's number (from 1) that first showed it, After
	// how long into the exploration.
	Run     int   `json:"run"`
	AfterMS int64 `json:"after_ms"`
	// Original and Minimal describe the schedules.
	Original []string `json:"original"`
	Minimal  []string `json:"minimal"`
	// ShrinkSteps counts the accepted steps, ShrinkRuns the runs spent;
	// BackedOff the steps given back because the file they made did not
	// reproduce every time.
	ShrinkSteps int `json:"shrink_steps"`
	ShrinkRuns  int `json:"shrink_runs"`
	BackedOff   int `json:"backed_off,omitempty"`
	// File is the minimal experiment file; Reproduced how many of
	// Reproductions runs of it met its expectation.
	File          string `json:"file"`
	Reproduced    int    `json:"reproduced"`
	Reproductions int    `json:"reproductions"`
	// Timeline is a reproducing run's timeline; Experiments the folders
	// of the runs it rests on, under the exploration's experiments folder.
	Timeline    string   `json:"timeline,omitempty"`
	Experiments []string `json:"experiments"`
	Error       string   `json:"error,omitempty"`
}

// HarnessError is the key of a finding where the harness, a client or a
// server failed outright.
const HarnessError = "harness_error"

type explorer struct {
	opts    Options
	base    *lab.Experiment
	bounds  Bounds
	lab     *lab.Lab
	span    time.Duration
	mu      sync.Mutex
	all     []*lab.Outcome
	started time.Time
}

// Run explores and writes the exploration's folder: explore.md,
// explore.json, findings/ (one minimal file per finding) and
// experiments/ (every run).
func Run(ctx context.Context, opts Options) (*Summary, error) {
	base, bounds, err := LoadBase(opts.Base)
	if err != nil {
		return nil, err
	}
	if opts.Runs <= 0 && opts.For <= 0 {
		return nil, fmt.Errorf("%w: give a number of runs or a time to explore for", ErrInput)
	}
	bounds = merge(bounds, opts.Bounds)
	server, _ := base.Server["target"].(string)
	bounds = bounds.withDefaults(server)
	if opts.Seed != nil {
		base.Seed = *opts.Seed
	}
	e := &explorer{opts: opts, base: base, bounds: bounds, started: time.Now(),
		lab: &lab.Lab{Out: opts.Out, Parallel: max(opts.Parallel, 1), NewRuntime: opts.NewRuntime, RuntimeName: opts.RuntimeName}}
	for _, c := range base.Workload.Calls {
		d, _ := time.ParseDuration(c.Duration)
		e.span += d
	}
	sum := &Summary{Base: opts.Base, Seed: base.Seed, Bounds: bounds, Started: e.started, Dir: opts.Out}
	if err := e.explore(ctx, sum); err != nil {
		return nil, err
	}
	if _, err := e.lab.Finish(e.all); err != nil {
		return nil, err
	}
	for i := range sum.Findings {
		f := &sum.Findings[i]
		for j, x := range f.Experiments {
			f.Experiments[j] = filepath.ToSlash(filepath.Join(lab.ExperimentsDir, x))
		}
		if f.Timeline != "" {
			f.Timeline = filepath.ToSlash(filepath.Join(lab.ExperimentsDir, f.Timeline, "timeline.html"))
		}
	}
	sum.AllRuns = e.lab.Ran()
	sum.WallMS = time.Since(e.started).Milliseconds()
	return sum, sum.Save(opts.Out)
}

func merge(file, flags Bounds) Bounds {
	if len(flags.Kinds) > 0 {
		file.Kinds = flags.Kinds
	}
	if flags.MaxFaults > 0 {
		file.MaxFaults = flags.MaxFaults
	}
	if flags.MaxWindow > 0 {
		file.MaxWindow = flags.MaxWindow
	}
	return file
}

// LoadBase reads the base experiment: it must be a valid experiment once
// its explore: block is taken out, and the block must name known kinds.
func LoadBase(path string) (*lab.Experiment, Bounds, error) {
	var b Bounds
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, b, fmt.Errorf("%w: %v", ErrInput, err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, b, fmt.Errorf("%w: %s: not a YAML mapping", ErrInput, path)
	}
	root := doc.Content[0]
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "explore" {
			continue
		}
		block := root.Content[i+1]
		dec := yaml.NewDecoder(bytes.NewReader(mustMarshal(block)))
		dec.KnownFields(true)
		if err := dec.Decode(&b); err != nil && !errors.Is(err, io.EOF) {
			return nil, b, fmt.Errorf("%w: %s:%d: explore: %v (kinds, max_faults, max_window)", ErrInput, path, block.Line, err)
		}
		root.Content = slices.Delete(root.Content, i, i+2)
		break
	}
	if _, err := spec.ParseNode(path, root, src); err != nil {
		return nil, b, fmt.Errorf("%w: %w", ErrInput, err)
	}
	for _, k := range b.Kinds {
		if !slices.Contains(faults.Kinds(), k) {
			return nil, b, fmt.Errorf("%w: %s: explore.kinds: unknown kind %q", ErrInput, path, k)
		}
	}
	var x lab.Experiment
	if err := root.Decode(&x); err != nil {
		return nil, b, fmt.Errorf("%w: %s: %v", ErrInput, path, err)
	}
	delete(x.Rest, "faults")
	x.Faults, x.Expect = nil, lab.Expect{}
	for role, t := range map[string]map[string]any{"server": x.Server, "client": x.Client} {
		if err := commandFound(t); err != nil {
			return nil, b, fmt.Errorf("%w: %s: %s.command: %v", ErrInput, path, role, err)
		}
	}
	return &x, b, nil
}

// commandFound checks that a target of the user's own names a program
// that can be run here: explore runs on the local runtime, and a program
// that is not there would fail every run the same way (a harness error to
// shrink, not a finding).
func commandFound(target map[string]any) error {
	if target["target"] != targets.Command {
		return nil
	}
	argv, _ := target["command"].([]any)
	if len(argv) == 0 {
		return nil // spec has said what is wrong with it
	}
	prog, _ := argv[0].(string)
	if _, err := exec.LookPath(prog); err != nil {
		return fmt.Errorf("%s: not found or not executable (build it first)", prog)
	}
	return nil
}

func mustMarshal(n *yaml.Node) []byte {
	b, _ := yaml.Marshal(n)
	return b
}

// experiment is the base with a schedule.
func (e *explorer) experiment(name, about string, s Schedule) *lab.Experiment {
	x := *e.base
	x.Name, x.Description = name, about
	x.Workload.Calls = slices.Clone(e.base.Workload.Calls)
	x.Faults = nil
	for _, f := range s {
		x.Faults = append(x.Faults, f.entry())
	}
	x.Expect = lab.Expect{Verdict: check.Inconclusive}
	return &x
}

// runOne runs one schedule; ok is false when the schedule is not a valid
// experiment.
func (e *explorer) runOne(ctx context.Context, name, about string, s Schedule) (*lab.Outcome, bool, error) {
	x := e.experiment(name, about, s)
	if _, err := x.Parse(); err != nil {
		return nil, false, nil
	}
	o, err := e.lab.Run(ctx, x)
	if err != nil {
		return nil, false, err
	}
	e.mu.Lock()
	e.all = append(e.all, o)
	e.mu.Unlock()
	return o, true, nil
}

// keyOf is what an outcome found: its violated invariants, a harness
// error and what kind (the error's words, without its numbers and paths),
// or "" for nothing.
func keyOf(o *lab.Outcome) (string, []string) {
	switch {
	case o.Verdict == nil:
		return HarnessError + ": " + errorKind(o.Error), nil
	case o.Verdict.Verdict == check.Fail:
		return strings.Join(o.Verdict.Violations, "+"), o.Verdict.Violations
	}
	return "", nil
}

func (e *explorer) say(format string, args ...any) { lab.Say(e.opts.Progress, format, args...) }

// explore draws and runs schedules, K at a time, and shrinks each new
// finding as it is found (in the order of the schedules' numbers, so the
// same seed finds and shrinks the same way).
func (e *explorer) explore(ctx context.Context, sum *Summary) error {
	seen := map[string]bool{}
	batch := max(e.opts.Parallel, 1)
	for next := 0; e.more(next); {
		n := batch
		if e.opts.Runs > 0 {
			n = min(n, e.opts.Runs-next)
		}
		outs := make([]*lab.Outcome, n)
		scheds := make([]Schedule, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for k := range n {
			i := next + k
			scheds[k] = e.valid(i)
			wg.Go(func() {
				outs[k], _, errs[k] = e.runOne(ctx, fmt.Sprintf("explore-%03d", i+1),
					fmt.Sprintf("Schedule %d drawn by chaosrun explore from seed %d.", i+1, e.base.Seed), scheds[k])
			})
		}
		wg.Wait()
		if ctx.Err() != nil {
			return nil
		}
		for k, o := range outs {
			if errs[k] != nil {
				return errs[k]
			}
			i := next + k
			if o == nil { // no valid schedule could be drawn for the base
				continue
			}
			sum.Runs++
			key, viol := keyOf(o)
			e.say("[explore] run %d: %s → %s", i+1, describe(scheds[k]), cmpOr(key, "nothing"))
			if key == "" {
				sum.Clean++
				continue
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			f := Finding{Key: key, Violations: viol, Run: i + 1, AfterMS: time.Since(e.started).Milliseconds(),
				Original: describeAll(scheds[k]), Experiments: []string{o.Folder}}
			if o.Error != "" {
				f.Error = o.Error
			}
			if err := e.shrink(ctx, &f, scheds[k], len(sum.Findings)+1); err != nil {
				return err
			}
			sum.Findings = append(sum.Findings, f)
		}
		next += n
	}
	return nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (e *explorer) more(next int) bool {
	if e.opts.Runs > 0 && next >= e.opts.Runs {
		return false
	}
	if e.opts.For > 0 && time.Since(e.started) >= e.opts.For {
		return false
	}
	return true
}

// valid draws schedule i, drawing again (from the same seed) while the
// schedule is not a valid experiment for the base (a fault its targets
// cannot take).
func (e *explorer) valid(i int) Schedule {
	calls := e.base.Workload.Calls
	for attempt := range 100 {
		s := draw(e.base.Seed, i*100+attempt, e.bounds, calls, e.span)
		if _, err := e.experiment("explore-check", "a drawn schedule", s).Parse(); err == nil {
			return s
		}
	}
	return nil
}

func describe(s Schedule) string { return strings.Join(describeAll(s), "; ") }

func describeAll(s Schedule) []string {
	out := make([]string, len(s))
	for i, f := range s {
		out[i] = f.String()
	}
	return out
}

var digits = regexp.MustCompile(`([0-9]+(\.[0-9]+)?[a-zµ]*)+`)

// errorKind reduces a harness error to what kind it is: "client exited
// with code 4 (see .../client.log)" and "client exited with code 4 (see
// another path)" are one kind, a deadline passed another.
func errorKind(msg string) string {
	msg, _, _ = strings.Cut(msg, " (see ")
	msg, _, _ = strings.Cut(msg, ": context ")
	return strings.TrimSpace(digits.ReplaceAllString(msg, "N"))
}

// isHarnessError reports whether a finding's key is a harness error.
func isHarnessError(key string) bool { return strings.HasPrefix(key, HarnessError) }

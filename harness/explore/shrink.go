package explore

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/lab"
)

// Files of an exploration's folder.
const (
	MarkdownFile = "explore.md"
	JSONFile     = "explore.json"
	FindingsDir  = "findings"
)

// reproduces runs the schedule K times at once and reports whether every
// run found the same thing: the same violated invariants (or a harness
// error), so findings that differ stay apart while they shrink.
func (e *explorer) reproduces(ctx context.Context, name string, s Schedule, key string, k int) (bool, []*lab.Outcome, error) {
	outs := make([]*lab.Outcome, k)
	errs := make([]error, k)
	oks := make([]bool, k)
	var wg sync.WaitGroup
	for j := range k {
		wg.Go(func() {
			outs[j], oks[j], errs[j] = e.runOne(ctx, fmt.Sprintf("%s-r%d", name, j+1), "A shrink candidate of chaosrun explore.", s)
		})
	}
	wg.Wait()
	all := true
	for j := range k {
		if errs[j] != nil {
			return false, nil, errs[j]
		}
		if !oks[j] {
			return false, nil, nil
		}
		if got, _ := keyOf(outs[j]); got != key {
			all = false
		}
	}
	return all, outs, nil
}

// shrink makes the finding's schedule minimal: it tries the schedule's
// candidates in order and takes the first that still violates the same
// invariant on every one of K runs, until none does or the runs are spent.
// Then it writes the minimal file and runs it Reproduce times.
func (e *explorer) shrink(ctx context.Context, f *Finding, s Schedule, n int) error {
	k, budget := e.opts.Repeats, e.opts.ShrinkRuns
	if k <= 0 {
		k = 2
	}
	if budget <= 0 {
		budget = 40
	}
	cur := s
	chain := []shrunk{{s: s}}
	name := fmt.Sprintf("explore-finding-%d", n)
	for f.ShrinkRuns+k <= budget {
		accepted := false
		for _, c := range cur.candidates() {
			if f.ShrinkRuns+k > budget {
				break
			}
			ok, outs, err := e.reproduces(ctx, fmt.Sprintf("%s-step-%d", name, f.ShrinkRuns/k+1), c, f.Key, k)
			if err != nil {
				return err
			}
			f.ShrinkRuns += k
			if ok {
				cur, accepted = c, true
				chain = append(chain, shrunk{s: c, outs: outs})
				f.ShrinkSteps++
				e.say("[explore] finding %d (%s): shrunk to %s", n, f.Key, describe(cur))
				break
			}
		}
		if !accepted {
			break
		}
	}
	// A step kept on K runs may still sit on a knife's edge (a fault timed
	// to the instant a call goes out): when the minimal file does not
	// reproduce every time, the shrink backs off to the step before, at
	// most maxBackOff times, and says so.
	for {
		top := chain[len(chain)-1]
		f.Minimal = describeAll(top.s)
		if err := e.writeMinimal(ctx, f, top.s, n, top.outs); err != nil {
			return err
		}
		if f.Reproduced == f.Reproductions || len(chain) == 1 || f.BackedOff == maxBackOff {
			for _, o := range top.outs {
				f.Experiments = append(f.Experiments, o.Folder)
			}
			return nil
		}
		e.say("[explore] finding %d (%s): %s reproduced %d of %d; backing off to the step before", n, f.Key, f.File, f.Reproduced, f.Reproductions)
		chain = chain[:len(chain)-1]
		f.BackedOff++
	}
}

// shrunk is one accepted step of a shrink: its schedule, and the runs that
// kept it.
type shrunk struct {
	s    Schedule
	outs []*lab.Outcome
}

// maxBackOff bounds how many steps a shrink backs off when its minimal
// file does not reproduce every time.
const maxBackOff = 3

// writeMinimal writes the minimal schedule as an experiment file expecting
// what it found, and runs it Reproduce times.
func (e *explorer) writeMinimal(ctx context.Context, f *Finding, s Schedule, n int, last []*lab.Outcome) error {
	base := strings.TrimSuffix(filepath.Base(e.opts.Base), filepath.Ext(e.opts.Base))
	name := fmt.Sprintf("%s-explored-%d", sanitize(base), n)
	x := e.experiment(name, fmt.Sprintf("Found by chaosrun explore (seed %d, schedule %d) and shrunk in %d steps from: %s. It violates %s.",
		e.base.Seed, f.Run, f.ShrinkSteps, strings.Join(f.Original, "; "), strings.Join(f.Violations, ", ")), s)
	switch {
	case isHarnessError(f.Key):
		x.Expect = lab.Expect{Verdict: check.Fail}
		x.Description += " The run fails the harness (" + f.Key + "): `chaosrun run` exits 4 on it until that is fixed."
	case len(last) > 0 && last[0].Verdict != nil:
		x.Found(*last[0].Verdict)
	default:
		x.Expect = lab.Expect{Verdict: check.Fail, Violations: f.Violations}
	}
	b, err := x.YAML()
	if err != nil {
		return err
	}
	dir := filepath.Join(e.opts.Out, FindingsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	f.File = filepath.Join(dir, name+".yaml")
	if err := os.WriteFile(f.File, b, 0o644); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	reps := e.opts.Reproduce
	if reps <= 0 {
		reps = 10
	}
	f.Reproductions, f.Reproduced, f.Timeline = reps, 0, ""
	expect := x.Expect
	outs := make([]*lab.Outcome, reps)
	errs := make([]error, reps)
	var wg sync.WaitGroup
	for j := range reps {
		wg.Go(func() {
			y := *x
			y.Name = fmt.Sprintf("%s-reproduce-%d", name, j+1)
			y.Expect = lab.Expect{Verdict: check.Inconclusive}
			outs[j], errs[j] = e.lab.Run(ctx, &y)
		})
	}
	wg.Wait()
	for j, o := range outs {
		if errs[j] != nil {
			return errs[j]
		}
		e.mu.Lock()
		e.all = append(e.all, o)
		e.mu.Unlock()
		if met(o, expect, f.Key) {
			f.Reproduced++
			if f.Timeline == "" {
				f.Timeline = o.Folder
			}
		}
	}
	e.say("[explore] finding %d (%s): %s reproduced %d of %d", n, f.Key, f.File, f.Reproduced, reps)
	return nil
}

// met reports whether a reproduction reached the minimal file's expectation.
func met(o *lab.Outcome, x lab.Expect, key string) bool {
	if isHarnessError(key) {
		got, _ := keyOf(o)
		return got == key
	}
	if o.Verdict == nil {
		return false
	}
	ok, _ := check.Expectation{Verdict: x.Verdict, Violations: x.Violations, CannotTell: x.CannotTell}.Match(*o.Verdict)
	return ok
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteRune('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// Save writes explore.json and explore.md.
func (s *Summary) Save(dir string) error {
	return save(dir, JSONFile, MarkdownFile, s, s.Markdown())
}

// save writes a summary as JSON and its Markdown into dir.
func save(dir, jsonFile, mdFile string, v any, markdown string) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, jsonFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, mdFile), []byte(markdown), 0o644); err != nil {
		return fmt.Errorf("explore: %w", err)
	}
	return nil
}

// Markdown is the summary a person reads.
func (s *Summary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# chaosrun explore: %s\n\nSeed %d; %d schedules tried (%d with no finding), %d experiments in all, %.1fs; kinds %s, at most %d faults, windows up to %s.\n\n",
		s.Base, s.Seed, s.Runs, s.Clean, s.AllRuns, float64(s.WallMS)/1000, strings.Join(s.Bounds.Kinds, ", "), s.Bounds.MaxFaults, s.Bounds.MaxWindow)
	if len(s.Findings) == 0 {
		b.WriteString("No finding: every schedule held or missed.\n")
		return b.String()
	}
	b.WriteString("| finding | first at run | after | shrink steps (runs) | minimal schedule | file | reproduced |\n|---|---:|---:|---:|---|---|---:|\n")
	for _, f := range s.Findings {
		rel, _ := filepath.Rel(s.Dir, f.File)
		steps := fmt.Sprintf("%d (%d)", f.ShrinkSteps, f.ShrinkRuns)
		if f.BackedOff > 0 {
			steps += fmt.Sprintf(", %d backed off", f.BackedOff)
		}
		fmt.Fprintf(&b, "| %s | %d | %.1fs | %s | %s | [%s](%s) | %d of %d |\n", f.Key, f.Run, float64(f.AfterMS)/1000,
			steps, strings.Join(f.Minimal, "; "), filepath.Base(f.File), filepath.ToSlash(rel), f.Reproduced, f.Reproductions)
	}
	for _, f := range s.Findings {
		fmt.Fprintf(&b, "\n## %s\n\nFirst seen in schedule %d: %s.\n\nShrunk to: %s.\n", f.Key, f.Run, strings.Join(f.Original, "; "), strings.Join(f.Minimal, "; "))
		if f.BackedOff > 0 {
			fmt.Fprintf(&b, "\nThe shrink backed off %d step(s): the smaller file did not reproduce every time.\n", f.BackedOff)
		}
		if f.Timeline != "" {
			fmt.Fprintf(&b, "\nTimeline of a reproduction: [%s](%s)\n", f.Timeline, f.Timeline)
		}
		if f.Error != "" {
			fmt.Fprintf(&b, "\nHarness error: %s\n", f.Error)
		}
	}
	return b.String()
}

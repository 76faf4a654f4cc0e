package results

import (
	"fmt"
	"path/filepath"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/harness/timeline"
)

// WriteTimeline writes res's timeline.html into its folder, drawn from in
// (the records it was judged on) and res's verdict.
func WriteTimeline(res *ExperimentResult, in check.Input) error {
	x := timeline.Experiment{Name: res.Name, Expected: res.Expected, Met: res.Met, Reasons: res.Reasons,
		Partial: res.Partial, Input: in, Verdict: *res.Verdict}
	if saved, err := spec.Load(filepath.Join(res.Dir, ExperimentFile)); err == nil {
		x.Description = saved.Description
	}
	return timeline.WriteFile(filepath.Join(res.Dir, timeline.File), x)
}

// writeIndex writes the run's index.html, linking each experiment's
// timeline.
func writeIndex(run *Run) error {
	x := timeline.Index{ID: run.ID, Runtime: run.Runtime, WallMS: run.WallMS}
	if run.Interrupted {
		x.Partial = "the run was interrupted; experiments marked partial stopped before their workload finished"
	}
	for _, r := range run.Results {
		e := timeline.Entry{Name: r.Label(), Expected: r.Expected, Met: r.Met, Reasons: r.Reasons, Error: r.Error,
			Partial: r.Partial, Verdict: r.Verdict}
		if rel, err := filepath.Rel(run.Dir, filepath.Join(r.Dir, timeline.File)); err == nil && exists(filepath.Join(r.Dir, timeline.File)) {
			e.Timeline = filepath.ToSlash(rel)
		}
		x.Experiments = append(x.Experiments, e)
	}
	return timeline.WriteIndexFile(filepath.Join(run.Dir, timeline.IndexFile), x)
}

// WriteHTML writes the pages of a judged run (what Rejudge returns): every
// judged experiment's timeline.html and, when dir is a run's folder, its
// index.html. It is what `chaosrun report DIR --html` writes.
func WriteHTML(run *Run) error {
	for _, r := range run.Results {
		if r.Verdict == nil {
			continue
		}
		in, err := check.LoadRun(r.Dir)
		if err != nil {
			return fmt.Errorf("html: %w", err)
		}
		if err := WriteTimeline(r, in); err != nil {
			return fmt.Errorf("html: %w", err)
		}
	}
	if exists(filepath.Join(run.Dir, ExperimentFile)) {
		return nil // one experiment's folder: no run to index
	}
	return writeIndex(run)
}

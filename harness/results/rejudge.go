package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/spec"
)

// Rejudge judges a saved run folder again, offline: dir is either a run
// folder (holding run.json and one folder per experiment) or one
// experiment's folder. Each experiment is judged from its recorded files
// and checked against the expect: block of its saved experiment.yaml; a
// verdict that differs from the saved verdict.json is reported as unmet, and
// so is an experiment marked partial (see PartialFile): an interrupted run's
// records are judged, but cannot meet an expectation. Nothing is written;
// WriteHTML writes the pages of what Rejudge returns.
func Rejudge(dir string) (*Run, error) { return RejudgeWith(dir, RejudgeOptions{}) }

// The records an offline judgement can leave out (RejudgeOptions.Without).
const (
	// RecordLedger judges the server's side from the wire alone, as for a
	// server that writes no ledger.
	RecordLedger = "ledger"
	// RecordHistory judges the client's side from the wire alone, as for a
	// client that writes no history.
	RecordHistory = "history"
	// RecordWire judges without the wire record, as runs before the wire
	// observer were.
	RecordWire = "wire"
)

// Records lists what RejudgeOptions.Without may name.
var Records = []string{RecordLedger, RecordHistory, RecordWire}

// RejudgeOptions change what an offline judgement reads.
type RejudgeOptions struct {
	// Without names records to judge without (see Records). The verdict is
	// then compared with the judgement of every record, invariant by
	// invariant: it meets when they reach the same verdict and every
	// invariant the same status, except where the full judgement says the
	// difference lies beyond the wire's sight (check.Result.Unseen).
	Without []string
}

// RejudgeWith is [Rejudge] with options.
func RejudgeWith(dir string, o RejudgeOptions) (*Run, error) {
	for _, w := range o.Without {
		if !slices.Contains(Records, w) {
			return nil, fmt.Errorf("report: cannot judge without %q: the records are %s", w, strings.Join(Records, ", "))
		}
	}
	dirs, err := experimentDirs(dir)
	if err != nil {
		return nil, err
	}
	run := &Run{ID: filepath.Base(dir), Dir: dir, Runtime: "offline", Parallel: 1}
	repetitions := map[string]*ExperimentResult{} // saved results by folder
	if b, err := os.ReadFile(filepath.Join(dir, RunFile)); err == nil {
		var saved Run
		if json.Unmarshal(b, &saved) == nil {
			run.ID, run.Runtime, run.WallMS, run.Interrupted = saved.ID, saved.Runtime+", re-judged offline", saved.WallMS, saved.Interrupted
			run.Repeat, run.Shard, run.Merged = saved.Repeat, saved.Shard, saved.Merged
			for _, r := range saved.Results {
				repetitions[filepath.Base(r.Dir)] = r
			}
		}
	}
	if len(o.Without) > 0 {
		run.Runtime += ", without " + strings.Join(o.Without, " and ")
	}
	for _, d := range dirs {
		res, err := rejudgeOne(d, o)
		if err != nil {
			return nil, err
		}
		if saved := repetitions[filepath.Base(d)]; saved != nil && saved.Name == res.Name {
			res.Repetition, res.Seed = saved.Repetition, saved.Seed
		}
		run.Results = append(run.Results, res)
	}
	return run, nil
}

func experimentDirs(dir string) ([]string, error) {
	if exists(filepath.Join(dir, ExperimentFile)) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && exists(filepath.Join(dir, e.Name(), ExperimentFile)) {
			dirs = append(dirs, filepath.Join(dir, e.Name()))
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("report: %s holds neither an experiment's results nor a run's", dir)
	}
	sort.Strings(dirs)
	return dirs, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func rejudgeOne(dir string, o RejudgeOptions) (*ExperimentResult, error) {
	x, err := spec.Load(filepath.Join(dir, ExperimentFile))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	res := &ExperimentResult{Name: x.Name, Dir: dir, Expected: x.Expect.Verdict}
	partial, err := LoadPartial(dir)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	in, err := check.LoadRun(dir)
	if err != nil {
		// An experiment the harness failed on left no complete record.
		res.Error, res.Partial = err.Error(), partial
		return res, nil
	}
	if len(o.Without) > 0 {
		full := check.Judge(in)
		for _, w := range o.Without {
			switch w {
			case RecordLedger:
				in.Ledger = nil
			case RecordHistory:
				in.History = nil
			case RecordWire:
				in.Wire = nil
			}
		}
		v := check.Judge(in)
		res.Verdict = &v
		res.Met, res.Reasons = compareJudgements(full, v)
		res.Wall = time.Duration(v.Figures.WallMS) * time.Millisecond
		return res, nil
	}
	v := check.Judge(in)
	res.Verdict = &v
	res.Met, res.Reasons = x.Expectation().Match(v)
	res.Wall = time.Duration(v.Figures.WallMS) * time.Millisecond
	if partial != "" {
		defer MarkPartial(res, partial)
	}
	saved, err := os.ReadFile(filepath.Join(dir, check.VerdictFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		res.Saved = SavedAbsent
		res.Reasons = append(res.Reasons, "no saved verdict.json to compare with")
	case err != nil:
		return nil, fmt.Errorf("report: %w", err)
	default:
		var now bytes.Buffer
		if err := v.WriteJSON(&now); err != nil {
			return nil, err
		}
		res.Saved = SavedSame
		if !bytes.Equal(bytes.TrimSpace(saved), bytes.TrimSpace(now.Bytes())) {
			res.Saved, res.Met = SavedDiffers, false
			res.Reasons = append(res.Reasons, "the verdict judged now differs from the saved verdict.json")
		}
	}
	return res, nil
}

// compareJudgements holds a judgement made without some record against the
// judgement of all of them: the same verdict, and every invariant the same
// status unless the full judgement names what the wire cannot see.
func compareJudgements(full, part check.Verdict) (bool, []string) {
	met := full.Verdict == part.Verdict
	var reasons []string
	if !met {
		reasons = append(reasons, fmt.Sprintf("verdict is %s, judged %s from every record", part.Verdict, full.Verdict))
	}
	for _, f := range full.Invariants {
		p, _ := part.Result(f.ID)
		switch {
		case p.Status == f.Status:
		case f.Unseen != "":
			reasons = append(reasons, fmt.Sprintf("%s is %s here, %s from every record, beyond the wire's sight: %s", f.ID, p.Status, f.Status, f.Unseen))
		default:
			met = false
			reasons = append(reasons, fmt.Sprintf("%s is %s, judged %s from every record: %s", f.ID, p.Status, f.Status, p.Summary))
		}
	}
	return met, reasons
}

package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
)

// ErrInvalidResults marks a results folder Merge cannot join: no run.json,
// a missing verdict, two runs of one folder name, an incomplete set of
// shards.
var ErrInvalidResults = errors.New("invalid results")

// Merge joins saved runs, typically the shards of one (run --shard I/N on
// several machines), into a new run folder under out: every experiment's
// folder is copied in, and the run's summary.md, junit.xml, run.json and
// index.html are written from the saved results and verdicts, as a run of
// all of them would have written them. Nothing is judged again (`chaosrun
// report` does that on the merged folder).
//
// Each of dirs is a run's folder (holding run.json) or a folder of run
// folders, such as a shard's --out or a downloaded artifact. When the runs
// are shards, they must be every shard of one count, each once.
//
// Runs that each repeated every experiment (run --repeat N, none a shard)
// are batches of one longer repetition: their runs of an experiment are
// numbered again one after the other, in the order the batches started, so
// ten batches of --repeat 10 merge into one run of each experiment 100
// times, tallied as such.
//
// The merged run's wall time is from the first run's start to the last
// one's end: the longest shard's when shards ran side by side, the sum of
// the batches' when they ran one after the other. Its parallelism is the
// most experiments the runs could run at once: the sum of the runs' that
// overlapped in time (shards side by side), one run's for batches that ran
// one after the other.
func Merge(out string, dirs []string) (*Run, error) {
	var runDirs []string
	for _, d := range dirs {
		found, err := findRuns(d)
		if err != nil {
			return nil, err
		}
		runDirs = append(runDirs, found...)
	}
	var runs []*Run
	for _, d := range runDirs {
		r, err := loadRun(d)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	if err := checkShards(runs); err != nil {
		return nil, err
	}
	folders := map[*ExperimentResult]string{}
	if batches(runs) {
		folders = renumber(runs)
	}
	merged, err := join(out, runs, folders)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(merged.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	for _, r := range merged.Results {
		dst := filepath.Join(merged.Dir, folderOf(r, folders))
		if !exists(r.Dir) { // a harness error before the experiment's folder was made: its result is all there is
			r.Dir = dst
			continue
		}
		if err := os.CopyFS(dst, os.DirFS(r.Dir)); err != nil {
			return nil, fmt.Errorf("merge: copy %s: %w", r.Dir, err)
		}
		r.Dir = dst
	}
	return merged, WriteReports(merged)
}

// findRuns returns dir if it is a run's folder, else the run folders in it.
func findRuns(dir string) ([]string, error) {
	if exists(filepath.Join(dir, RunFile)) {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: merge: %w", ErrInvalidResults, err)
	}
	var found []string
	for _, e := range entries {
		if e.IsDir() && exists(filepath.Join(dir, e.Name(), RunFile)) {
			found = append(found, filepath.Join(dir, e.Name()))
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%w: merge: %s holds no %s, nor do its folders: give the folders that chaosrun run wrote (results/<run-id>)", ErrInvalidResults, dir, RunFile)
	}
	return found, nil
}

// loadRun reads a saved run: its run.json, and every judged experiment's
// verdict.json from its folder, wherever the run's folder now is.
func loadRun(dir string) (*Run, error) {
	b, err := os.ReadFile(filepath.Join(dir, RunFile))
	if err != nil {
		return nil, fmt.Errorf("%w: merge: %w", ErrInvalidResults, err)
	}
	var r Run
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("%w: merge: %s: %w", ErrInvalidResults, filepath.Join(dir, RunFile), err)
	}
	for _, x := range r.Results {
		x.Dir = filepath.Join(dir, filepath.Base(x.Dir))
		if x.Error != "" {
			continue
		}
		v, err := check.LoadVerdict(filepath.Join(x.Dir, check.VerdictFile))
		if err != nil {
			return nil, fmt.Errorf("%w: merge: %s was judged, but: %w", ErrInvalidResults, x.Label(), err)
		}
		x.Verdict, x.Wall = &v, time.Duration(v.Figures.WallMS)*time.Millisecond
	}
	r.Dir = dir
	return &r, nil
}

// checkShards holds shards to being every shard of one count, each once;
// runs that are no shards merge as they are, but not with shards.
func checkShards(runs []*Run) error {
	var shards []Shard
	for _, r := range runs {
		if r.Shard == "" {
			continue
		}
		s, err := ParseShard(r.Shard)
		if err != nil {
			return fmt.Errorf("%w: merge: %s: %w", ErrInvalidResults, r.Dir, err)
		}
		shards = append(shards, s)
	}
	if len(shards) == 0 {
		return nil
	}
	if len(shards) < len(runs) {
		return fmt.Errorf("%w: merge: %d of the %d runs are shards and the others are not: merge the shards of one run", ErrInvalidResults, len(shards), len(runs))
	}
	count := shards[0].Count
	seen := make([]int, count+1)
	for i, s := range shards {
		if s.Count != count {
			return fmt.Errorf("%w: merge: %s is shard %s, but %s is shard %s: merge the shards of one count", ErrInvalidResults, runs[0].Dir, shards[0], runs[i].Dir, s)
		}
		seen[s.Index]++
	}
	var missing, twice []string
	for i := 1; i <= count; i++ {
		switch {
		case seen[i] == 0:
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		case seen[i] > 1:
			twice = append(twice, fmt.Sprintf("%d/%d", i, count))
		}
	}
	if len(missing) > 0 || len(twice) > 0 {
		return fmt.Errorf("%w: merge: the shards are not every shard of %d once (missing: %s; more than once: %s)",
			ErrInvalidResults, count, orNone(missing), orNone(twice))
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

// batches reports whether runs are batches of one repetition: more than
// one, none a shard, each having repeated its experiments.
func batches(runs []*Run) bool {
	if len(runs) < 2 {
		return false
	}
	for _, r := range runs {
		if r.Shard != "" || r.Repeat < 2 {
			return false
		}
	}
	return true
}

// renumber numbers the repetitions of batches again, experiment by
// experiment, one batch after the other in the order they started, and
// returns each result's folder in the merged run. It sets Repetition and
// the runs' Repeat to the counts of the merged run.
func renumber(runs []*Run) map[*ExperimentResult]string {
	slices.SortStableFunc(runs, func(a, b *Run) int {
		if c := a.Started.Compare(b.Started); c != 0 {
			return c
		}
		return strings.Compare(a.Dir, b.Dir)
	})
	count := map[string]int{}
	for _, r := range runs {
		for _, x := range r.Results {
			count[x.Name]++
		}
	}
	width := len(fmt.Sprint(slices.Max(slices.Collect(maps.Values(count)))))
	folders, next, total := map[*ExperimentResult]string{}, map[string]int{}, 0
	for _, r := range runs {
		total += r.Repeat
		slices.SortStableFunc(r.Results, func(a, b *ExperimentResult) int { return a.Repetition - b.Repetition })
		for _, x := range r.Results {
			next[x.Name]++
			x.Repetition = next[x.Name]
			folders[x] = fmt.Sprintf("%s.r%0*d", x.Name, width, x.Repetition)
		}
	}
	for _, r := range runs {
		r.Repeat = total
	}
	return folders
}

// folderOf is a result's folder in the merged run: renumbered, or as it was.
func folderOf(x *ExperimentResult, folders map[*ExperimentResult]string) string {
	if f, ok := folders[x]; ok {
		return f
	}
	return filepath.Base(x.Dir)
}

// overlappingParallel is the largest sum of the parallelism of runs that
// were running at one instant.
func overlappingParallel(runs []*Run) int {
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		end := r.Started.Add(time.Duration(r.WallMS) * time.Millisecond)
		edges = append(edges, edge{r.Started, r.Parallel}, edge{end, -r.Parallel})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // a run ending as another starts did not overlap it
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	return most
}

// join makes the merged run of runs, its results sorted by experiment and
// repetition as one run of them all lists them; folders names the results
// whose folder in the merged run is not their own (see renumber).
func join(out string, runs []*Run, folders map[*ExperimentResult]string) (*Run, error) {
	m := &Run{ID: NewRunID(), Repeat: runs[0].Repeat, Started: runs[0].Started}
	m.Dir = filepath.Join(out, m.ID)
	var runtimes []string
	var end time.Time            // when the last of the runs ended
	owner := map[string]string{} // experiment folder → the run holding it
	for _, r := range runs {
		if !slices.Contains(runtimes, r.Runtime) {
			runtimes = append(runtimes, r.Runtime)
		}
		if r.Repeat != m.Repeat {
			m.Repeat = 0 // the runs asked for different counts: Tallies say what happened
		}
		if r.Started.Before(m.Started) {
			m.Started = r.Started
		}
		if e := r.Started.Add(time.Duration(r.WallMS) * time.Millisecond); e.After(end) {
			end = e
		}
		m.Interrupted = m.Interrupted || r.Interrupted
		m.Merged = append(m.Merged, r.Dir)
		for _, x := range r.Results {
			base := folderOf(x, folders)
			if other, ok := owner[base]; ok {
				return nil, fmt.Errorf("%w: merge: both %s and %s hold %s: merge the shards of one run, or batches of run --repeat", ErrInvalidResults, other, r.Dir, base)
			}
			owner[base] = r.Dir
			m.Results = append(m.Results, x)
		}
	}
	m.WallMS = end.Sub(m.Started).Milliseconds()
	m.Parallel = overlappingParallel(runs)
	m.Runtime = strings.Join(runtimes, "+")
	slices.SortStableFunc(m.Results, func(a, b *ExperimentResult) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return a.Repetition - b.Repetition
	})
	return m, nil
}

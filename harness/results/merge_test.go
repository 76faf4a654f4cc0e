package results

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// saveShard writes a run folder as `run --shard` leaves it: run.json and
// the reports, and each experiment's folder with its records and verdict.
// Experiments named in unmet do not meet their expectation.
func saveShard(t *testing.T, root, shard string, names []string, unmet ...string) string {
	t.Helper()
	run := &Run{ID: "shard-" + filepath.Base(root), Dir: filepath.Join(root, "run"), Runtime: "local", Parallel: 2, Shard: shard, WallMS: 3000}
	for _, name := range names {
		dir := filepath.Join(run.Dir, name)
		v := saveExperiment(t, dir)
		res := &ExperimentResult{Name: name, Dir: dir, Expected: check.Fail, Verdict: &v, Met: true}
		for _, u := range unmet {
			if u == name {
				res.Met, res.Reasons = false, []string{"verdict is fail, expected pass"}
			}
		}
		run.Results = append(run.Results, res)
	}
	require.NoError(t, WriteReports(run))
	return root // a shard's --out: the run folder is inside
}

func TestMergeJoinsShardsIntoOneRun(t *testing.T) {
	tests := []struct {
		name    string
		unmet   []string
		want    Outcome
		met     int
		failing int
	}{
		{"every expectation met", nil, AllMet, 3, 0},
		{"one unmet in the second shard", []string{"charlie"}, NotMet, 2, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			one := saveShard(t, t.TempDir(), "1/2", []string{"alpha", "bravo"}, tc.unmet...)
			two := saveShard(t, t.TempDir(), "2/2", []string{"charlie"}, tc.unmet...)
			out := t.TempDir()
			run, err := Merge(out, []string{two, one})
			require.NoError(t, err)

			assert.Equal(t, tc.want, run.Outcome())
			require.Len(t, run.Results, 3)
			for i, name := range []string{"alpha", "bravo", "charlie"} {
				assert.Equal(t, name, run.Results[i].Name, "sorted by name")
				assert.FileExists(t, filepath.Join(run.Dir, name, check.VerdictFile), "the folder is copied in")
				assert.Equal(t, filepath.Join(run.Dir, name), run.Results[i].Dir)
			}
			assert.Equal(t, int64(3000), run.WallMS, "shards ran side by side")
			assert.Equal(t, 4, run.Parallel)
			assert.Len(t, run.Merged, 2)

			summary, err := os.ReadFile(filepath.Join(run.Dir, SummaryFile))
			require.NoError(t, err)
			assert.Contains(t, string(summary), "merged from 2 runs")
			assert.Contains(t, string(summary), fmt.Sprintf("**%d of 3 expectations met.**", tc.met))
			var doc junitSuites
			b, err := os.ReadFile(filepath.Join(run.Dir, JUnitFile))
			require.NoError(t, err)
			require.NoError(t, xml.Unmarshal(b, &doc))
			require.Len(t, doc.Suites, 1)
			assert.Equal(t, []int{3, tc.failing}, []int{doc.Suites[0].Tests, doc.Suites[0].Failures})
			assert.FileExists(t, filepath.Join(run.Dir, RunFile))
			assert.FileExists(t, filepath.Join(run.Dir, "index.html"))

			again, err := Rejudge(run.Dir)
			require.NoError(t, err, "the merged folder is a run folder report can judge")
			assert.Len(t, again.Results, 3)
		})
	}
}

func TestMergeKeepsAHarnessErrorThatLeftNoFolder(t *testing.T) {
	one := saveShard(t, t.TempDir(), "1/2", []string{"alpha"})
	root := t.TempDir()
	run := &Run{ID: "shard-b", Dir: filepath.Join(root, "run"), Runtime: "local", Parallel: 2, Shard: "2/2", WallMS: 1000}
	run.Results = append(run.Results, &ExperimentResult{Name: "bravo", Dir: filepath.Join(run.Dir, "bravo"),
		Expected: check.Pass, Error: "not started: docker runtime: no daemon"})
	require.NoError(t, os.MkdirAll(run.Dir, 0o755))
	require.NoError(t, WriteReports(run))
	require.NoDirExists(t, filepath.Join(run.Dir, "bravo"), "the runtime failed before the folder was made")

	merged, err := Merge(t.TempDir(), []string{one, root})
	require.NoError(t, err, "one shard's harness error is a result to merge, not a reason to fail the merge")
	require.Len(t, merged.Results, 2)
	assert.Equal(t, HarnessError, merged.Outcome())
	assert.Equal(t, "not started: docker runtime: no daemon", merged.Results[1].Error)
	summary, err := os.ReadFile(filepath.Join(merged.Dir, SummaryFile))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "no daemon")
}

func TestMergeRefusesWhatIsNotOneSetOfShards(t *testing.T) {
	shard := func(s string, names ...string) string { return saveShard(t, t.TempDir(), s, names) }
	a1, b2, c2 := shard("1/2", "alpha"), shard("2/2", "bravo"), shard("2/2", "charlie")
	tests := []struct {
		name string
		dirs []string
		want string
	}{
		{"a shard missing", []string{a1}, "missing: 2/2; more than once: none"},
		{"a shard twice", []string{a1, b2, c2}, "missing: none; more than once: 2/2"},
		{"shards of two counts", []string{a1, b2, shard("3/3", "delta")}, "merge the shards of one count"},
		{"a whole run among shards", []string{a1, b2, shard("", "echo")}, "2 of the 3 runs are shards"},
		{"one experiment in two runs", []string{shard("", "alpha"), shard("", "alpha")}, "hold alpha: merge the shards of one run, or batches"},
		{"no run.json", []string{t.TempDir()}, "holds no run.json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			_, err := Merge(out, tc.dirs)
			require.ErrorIs(t, err, ErrInvalidResults)
			assert.ErrorContains(t, err, tc.want)
			entries, _ := os.ReadDir(out)
			assert.Empty(t, entries, "nothing is written")
		})
	}
}

// saveBatch writes a run folder as `run --repeat n` leaves it, started at
// started: every experiment n times (<name>.r<k>), the repetitions in unmet
// (of every experiment) not meeting their expectation.
func saveBatch(t *testing.T, started time.Time, n int, names []string, unmet ...int) string {
	t.Helper()
	root := t.TempDir()
	run := &Run{ID: "batch", Dir: filepath.Join(root, "run"), Runtime: "local", Parallel: 2, Repeat: n, Started: started, WallMS: 2000}
	for _, name := range names {
		for k := 1; k <= n; k++ {
			dir := filepath.Join(run.Dir, fmt.Sprintf("%s.r%d", name, k))
			v := saveExperiment(t, dir)
			res := &ExperimentResult{Name: name, Repetition: k, Dir: dir, Expected: check.Fail, Verdict: &v, Met: true}
			for _, u := range unmet {
				if u == k {
					res.Met, res.Reasons = false, []string{"verdict is fail, expected pass"}
				}
			}
			run.Results = append(run.Results, res)
		}
	}
	require.NoError(t, WriteReports(run))
	return root
}

func TestMergeNumbersBatchesOfRepeatsOneAfterTheOther(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	names := []string{"alpha", "bravo"}
	first := saveBatch(t, t0, 5, names)
	second := saveBatch(t, t0.Add(10*time.Minute), 6, names, 2) // its second run of each is unmet

	run, err := Merge(t.TempDir(), []string{second, first}) // given out of order: the start times order them
	require.NoError(t, err)
	assert.Equal(t, 11, run.Repeat, "5 and 6 runs of each are 11")
	assert.Equal(t, (10*time.Minute + 2*time.Second).Milliseconds(), run.WallMS, "from the first batch's start to the second's end")
	assert.Equal(t, 2, run.Parallel, "the batches ran one after the other, two experiments at a time")
	require.Len(t, run.Results, 22)
	for i, x := range run.Results {
		name, k := names[i/11], i%11+1
		assert.Equal(t, name, x.Name)
		assert.Equal(t, k, x.Repetition)
		assert.Equal(t, filepath.Join(run.Dir, fmt.Sprintf("%s.r%02d", name, k)), x.Dir)
		assert.FileExists(t, filepath.Join(x.Dir, check.VerdictFile), "the folder is copied in under its new number")
		assert.Equal(t, k != 7, x.Met, "the later batch's second run is the merged run's seventh")
	}
	require.Len(t, run.Tallies, 2)
	for _, tally := range run.Tallies {
		assert.Equal(t, 10, tally.Met, tally.Name)
		assert.Equal(t, 11, tally.Runs, tally.Name)
	}
	summary, err := os.ReadFile(filepath.Join(run.Dir, SummaryFile))
	require.NoError(t, err)
	assert.Contains(t, string(summary), "each experiment 11 times")
	assert.Contains(t, string(summary), "**20 of 22 expectations met.**")

	again, err := Rejudge(run.Dir)
	require.NoError(t, err, "the merged folder is a run folder report can judge")
	assert.Len(t, again.Results, 22)
}

func TestMergedParallelismCountsRunsThatOverlapped(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 17, 0, 0, 0, time.UTC)
	run := func(startS, wallS, parallel int) *Run {
		return &Run{Started: t0.Add(time.Duration(startS) * time.Second), WallMS: int64(wallS) * 1000, Parallel: parallel}
	}
	tests := []struct {
		name string
		runs []*Run
		want int
	}{
		{"one run", []*Run{run(0, 10, 2)}, 2},
		{"side by side", []*Run{run(0, 10, 2), run(0, 8, 2), run(1, 5, 3)}, 7},
		{"one after the other", []*Run{run(0, 10, 2), run(20, 10, 2), run(40, 10, 2)}, 2},
		{"one starting as the other ends", []*Run{run(0, 10, 2), run(10, 10, 3)}, 3},
		{"partly overlapping", []*Run{run(0, 10, 2), run(5, 10, 2), run(12, 10, 4)}, 6},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, overlappingParallel(tc.runs))
		})
	}
}

package results

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repeatedRun is a run whose experiments ran several times with the given
// outcomes: each result's verdict and met as recorded.
func repeatedRun(results ...*ExperimentResult) *Run {
	run := &Run{ID: "r", Dir: "out/r", Runtime: "local", Parallel: 2, Repeat: 3}
	reps := map[string]int{}
	for _, x := range results {
		reps[x.Name]++
		x.Repetition = reps[x.Name]
		x.Dir = filepath.Join(run.Dir, x.Name+".r"+string(rune('0'+x.Repetition)))
		run.Results = append(run.Results, x)
	}
	return run
}

func metFail(name string) *ExperimentResult {
	return &ExperimentResult{Name: name, Expected: check.Fail, Met: true, Verdict: verdict(check.Fail, check.NoDuplicateSideEffects)}
}

func unmetPass(name string) *ExperimentResult {
	return &ExperimentResult{Name: name, Expected: check.Fail, Verdict: verdict(check.Pass), Reasons: []string{"verdict is pass, expected fail"}}
}

func broken(name string) *ExperimentResult {
	return &ExperimentResult{Name: name, Expected: check.Fail, Error: "server did not start"}
}

// TestTallyCountsTheRecordedVerdicts: the counts come from the results, so
// runs of one experiment with different outcomes give different counts
// (the run's Repeat, 3 here, counts nothing).
func TestTallyCountsTheRecordedVerdicts(t *testing.T) {
	tests := []struct {
		name    string
		results []*ExperimentResult
		want    []Tally
	}{
		{"all met", []*ExperimentResult{metFail("a"), metFail("a"), metFail("a")}, []Tally{
			{Name: "a", Expected: check.Fail, Runs: 3, Met: 3, Outcomes: []OutcomeCount{
				{Verdict: check.Fail, Violations: []string{check.NoDuplicateSideEffects}, Count: 3, Met: true, Runs: []string{"a.r1", "a.r2", "a.r3"}}}}}},
		{"one of three missed", []*ExperimentResult{metFail("a"), unmetPass("a"), metFail("a")}, []Tally{
			{Name: "a", Expected: check.Fail, Runs: 3, Met: 2, Outcomes: []OutcomeCount{
				{Verdict: check.Fail, Violations: []string{check.NoDuplicateSideEffects}, Count: 2, Met: true, Runs: []string{"a.r1", "a.r3"}},
				{Verdict: check.Pass, Violations: []string{}, Count: 1, Runs: []string{"a.r2"}}}}}},
		{"two experiments, a harness error, a run missing", []*ExperimentResult{broken("b"), metFail("a"), unmetPass("b"), unmetPass("b")}, []Tally{
			{Name: "b", Expected: check.Fail, Runs: 3, Met: 0, Outcomes: []OutcomeCount{
				{Verdict: check.Pass, Violations: []string{}, Count: 2, Runs: []string{"b.r2", "b.r3"}},
				{Verdict: HarnessErrorOutcome, Violations: []string{}, Count: 1, Runs: []string{"b.r1"}}}},
			{Name: "a", Expected: check.Fail, Runs: 1, Met: 1, Outcomes: []OutcomeCount{
				{Verdict: check.Fail, Violations: []string{check.NoDuplicateSideEffects}, Count: 1, Met: true, Runs: []string{"a.r1"}}}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := repeatedRun(tc.results...)
			assert.True(t, run.Repeated())
			assert.Equal(t, tc.want, run.TallyRuns())
		})
	}
	assert.False(t, sampleRun().Repeated(), "experiments that ran once are not tallied")
}

// TestRepeatedRunReportsCarryTheCounts: the summary, run.json and JUnit of
// a repeated run say how many runs of each experiment met, from the
// results.
func TestRepeatedRunReportsCarryTheCounts(t *testing.T) {
	run := repeatedRun(metFail("a"), unmetPass("a"), metFail("a"), broken("b"), metFail("b"), metFail("b"))
	run.Dir = t.TempDir()
	for _, x := range run.Results {
		x.Dir = filepath.Join(run.Dir, filepath.Base(x.Dir))
	}
	require.NoError(t, WriteReports(run))

	summary, err := os.ReadFile(filepath.Join(run.Dir, SummaryFile))
	require.NoError(t, err)
	s := string(summary)
	assert.Contains(t, s, "each experiment 3 times. **4 of 6 expectations met.**")
	assert.Contains(t, s, "| a | fail | **2 of 3** | fail: no_duplicate_side_effects ×2 ([r1](a.r1/) [r3](a.r3/)); **pass ×1, not met** ([r2](a.r2/)) |")
	assert.Contains(t, s, "| b | fail | **2 of 3** | fail: no_duplicate_side_effects ×2 ([r2](b.r2/) [r3](b.r3/)); **harness error ×1, not met** ([r1](b.r1/)) |")
	assert.Contains(t, s, "| a #2 | fail | pass | **no** |")
	assert.Contains(t, s, "## a #2: expectation not met")

	var saved Run
	b, err := os.ReadFile(filepath.Join(run.Dir, RunFile))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &saved))
	require.Len(t, saved.Tallies, 2)
	assert.Equal(t, [2]int{3, 2}, [2]int{saved.Tallies[0].Runs, saved.Tallies[0].Met})
	assert.Equal(t, 2, saved.Results[1].Repetition)

	var doc junitSuites
	b, err = os.ReadFile(filepath.Join(run.Dir, JUnitFile))
	require.NoError(t, err)
	require.NoError(t, xml.Unmarshal(b, &doc))
	require.Len(t, doc.Suites, 2, "a suite per experiment")
	a, bs := doc.Suites[0], doc.Suites[1]
	assert.Equal(t, []int{3, 1, 0}, []int{a.Tests, a.Failures, a.Errors})
	assert.Equal(t, []int{3, 0, 1}, []int{bs.Tests, bs.Failures, bs.Errors})
	require.NotNil(t, a.Properties)
	assert.Contains(t, a.Properties.Items, junitProperty{Name: "met", Value: "2 of 3"})
	assert.Equal(t, "a #2", a.Cases[1].Name)

	var plain bytes.Buffer
	require.NoError(t, WriteJUnit(&plain, sampleRun()))
	assert.NotContains(t, plain.String(), "<properties>", "a run without repeats keeps one suite")
}

package results

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func verdict(v string, violations ...string) *check.Verdict {
	return &check.Verdict{Verdict: v, Violations: violations, Figures: check.Figures{WallMS: 1500, ScheduledMS: 1000, Duplicates: 1}}
}

func TestOutcomeIsTheWorstResult(t *testing.T) {
	met := &ExperimentResult{Verdict: verdict(check.Fail), Met: true}
	notMet := &ExperimentResult{Verdict: verdict(check.Pass)}
	inconclusive := &ExperimentResult{Verdict: verdict(check.Inconclusive)}
	expectedInconclusive := &ExperimentResult{Verdict: verdict(check.Inconclusive), Met: true}
	broken := &ExperimentResult{Error: "agent did not start"}
	tests := []struct {
		name    string
		results []*ExperimentResult
		want    Outcome
	}{
		{"all met", []*ExperimentResult{met, expectedInconclusive}, AllMet},
		{"inconclusive", []*ExperimentResult{met, inconclusive}, Inconclusive},
		{"not met beats inconclusive", []*ExperimentResult{inconclusive, notMet}, NotMet},
		{"harness error beats all", []*ExperimentResult{notMet, broken, met}, HarnessError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, (&Run{Results: tc.results}).Outcome())
		})
	}
}

func sampleRun() *Run {
	return &Run{ID: "r1", Runtime: "local", Parallel: 2, WallMS: 4200, Results: []*ExperimentResult{
		{Name: "double-charge", Dir: "r1/double-charge", Expected: check.Fail, Met: true,
			Verdict: verdict(check.Fail, check.NoDuplicateSideEffects)},
		{Name: "fixed", Dir: "r1/fixed", Expected: check.Pass, Reasons: []string{"verdict is fail, expected pass"},
			Verdict: &check.Verdict{Verdict: check.Fail, Violations: []string{check.NoSessionFork},
				Invariants: []check.Result{{ID: check.NoSessionFork, Status: check.Violated, Summary: "1 fork", Evidence: []check.Evidence{{Text: "ledger n=3", Refs: []check.Ref{{File: check.RefLedger, N: 3}}}}}}}},
		{Name: "broken", Dir: "r1/broken", Expected: check.Pass, Error: "server did not start"},
	}}
}

func TestSummaryTableAndUnmetDetails(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteSummary(&b, sampleRun()))
	s := b.String()
	assert.Contains(t, s, "**1 of 3 expectations met.**")
	assert.Contains(t, s, "| double-charge | fail | fail | yes | no_duplicate_side_effects | 1 |")
	assert.Contains(t, s, "1.5s / 1.0s (1.50)")
	assert.Contains(t, s, "| broken | pass | harness error | no |")
	assert.Contains(t, s, "## fixed: expectation not met\n\n- verdict is fail, expected pass")
	assert.Contains(t, s, "- harness error: server did not start")
	assert.NotContains(t, s, "## double-charge")
}

func TestJUnitHasOneCasePerExperiment(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, WriteJUnit(&b, sampleRun()))
	var doc junitSuites
	require.NoError(t, xml.Unmarshal(b.Bytes(), &doc))
	require.Len(t, doc.Suites, 1)
	s := doc.Suites[0]
	assert.Equal(t, 3, s.Tests)
	assert.Equal(t, 1, s.Failures)
	assert.Equal(t, 1, s.Errors)
	require.Len(t, s.Cases, 3)
	assert.Nil(t, s.Cases[0].Failure)
	require.NotNil(t, s.Cases[1].Failure)
	assert.Contains(t, s.Cases[1].Failure.Text, "no_session_fork: 1 fork\n  ledger n=3")
	require.NotNil(t, s.Cases[2].Error)
	assert.Equal(t, "server did not start", s.Cases[2].Error.Message)
	for _, c := range s.Cases {
		_, err := strconv.ParseFloat(c.Time, 64)
		assert.NoError(t, err, "%s: time %q is a number, a harness error's too", c.Name, c.Time)
	}
}

const savedExperiment = `name: saved
description: A saved run re-judged offline.
workload:
  calls: [{tool: charge, args: {amount_cents: 5}, duration: 1s}]
expect:
  verdict: fail
  violations: [no_duplicate_side_effects]
`

// saveExperiment writes an experiment folder as a run leaves it: the file,
// the records, and the verdict judged from them.
func saveExperiment(t *testing.T, dir string) check.Verdict {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ExperimentFile), []byte(savedExperiment), 0o644))
	in := check.Input{
		History: []history.Record{
			{TUS: 10, Client: "c1", Kind: history.KindInvoke, Call: "c1-1", OrderID: "c1-1", Tool: "charge", Session: "s", RequestID: "2"},
			{TUS: 20, Client: "c1", Kind: history.KindStreamBreak, Call: "c1-1", Session: "s", RequestID: "2", Reason: "reset"},
			{TUS: 90, Client: "c1", Kind: history.KindOK, Call: "c1-1", OrderID: "c1-1", Session: "s", RequestID: "2", EventID: 4},
		},
		Ledger: []sideeffects.Record{
			{ID: "a", N: 1, TUS: 5, Kind: sideeffects.KindSessionOpened, Session: "s", Client: "c1"},
			{ID: "b", N: 2, TUS: 50, Kind: sideeffects.KindCharge, Session: "s", OrderID: "c1-1", AmountCents: 5},
			{ID: "c", N: 3, TUS: 60, Kind: sideeffects.KindCharge, Session: "s", OrderID: "c1-1", AmountCents: 5},
			{ID: "d", N: 4, TUS: 70, Kind: sideeffects.KindResultWritten, Session: "s", RequestID: "2", EventID: 4},
		},
		Faults: []faults.Entry{{Kind: "reset", Target: "mcp", StartUS: 15, EndUS: 25}},
		Wall:   time.Second, Scheduled: time.Second,
	}
	require.NoError(t, check.SaveRun(dir, in))
	v := check.Judge(in)
	require.NoError(t, check.SaveVerdict(filepath.Join(dir, check.VerdictFile), v))
	return v
}

func TestRejudgeASavedRun(t *testing.T) {
	runDir := t.TempDir()
	want := saveExperiment(t, filepath.Join(runDir, "saved"))
	require.Equal(t, check.Fail, want.Verdict)

	for _, dir := range []string{runDir, filepath.Join(runDir, "saved")} {
		run, err := Rejudge(dir)
		require.NoError(t, err)
		require.Len(t, run.Results, 1)
		r := run.Results[0]
		assert.True(t, r.Met, r.Reasons)
		assert.Equal(t, want, *r.Verdict)
		var summary bytes.Buffer
		require.NoError(t, WriteSummary(&summary, run))
		assert.Contains(t, summary.String(), "Judged again: every verdict (1 of 1) matches its saved verdict.json.")
	}

	// A verdict.json that disagrees with the records is reported.
	require.NoError(t, check.SaveVerdict(filepath.Join(runDir, "saved", check.VerdictFile), check.Verdict{Verdict: check.Pass}))
	run, err := Rejudge(runDir)
	require.NoError(t, err)
	assert.False(t, run.Results[0].Met)
	assert.Contains(t, run.Results[0].Reasons, "the verdict judged now differs from the saved verdict.json")
	var summary bytes.Buffer
	require.NoError(t, WriteSummary(&summary, run))
	assert.Contains(t, summary.String(), "Judged again: 0 of 1 verdicts match their saved verdict.json")

	_, err = Rejudge(t.TempDir())
	require.ErrorContains(t, err, "holds neither")
}

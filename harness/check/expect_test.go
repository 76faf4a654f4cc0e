package check

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestParseBound(t *testing.T) {
	tests := []struct {
		in   string
		want Bound
		err  bool
	}{
		{"0", Bound{"==", 0}, false},
		{"3", Bound{"==", 3}, false},
		{">=1", Bound{">=", 1}, false},
		{"<=5", Bound{"<=", 5}, false},
		{">0", Bound{">", 0}, false},
		{"<2", Bound{"<", 2}, false},
		{"==4", Bound{"==", 4}, false},
		{" >= 40 ", Bound{">=", 40}, false},
		{"", Bound{}, true},
		{">=", Bound{}, true},
		{"=4", Bound{}, true},
		{"!=4", Bound{}, true},
		{"=>4", Bound{}, true},
		{"-1", Bound{}, true},
		{"+1", Bound{}, true},
		{"1.5", Bound{}, true},
		{"1e3", Bound{}, true},
		{"four", Bound{}, true},
		{">=1 <=5", Bound{}, true},
		{"99999999999999999999", Bound{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBound(tc.in)
			if tc.err {
				require.ErrorIs(t, err, ErrBound)
				assert.ErrorContains(t, err, `">=1"`, "the error says what is allowed")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestBoundHolds(t *testing.T) {
	tests := []struct {
		bound string
		yes   []int64
		no    []int64
	}{
		{"0", []int64{0}, []int64{1}},
		{">=1", []int64{1, 7}, []int64{0}},
		{"<=5", []int64{0, 5}, []int64{6}},
		{">0", []int64{1}, []int64{0}},
		{"<2", []int64{0, 1}, []int64{2}},
		{"==4", []int64{4}, []int64{3, 5}},
	}
	for _, tc := range tests {
		b, err := ParseBound(tc.bound)
		require.NoError(t, err)
		for _, v := range tc.yes {
			assert.True(t, b.Holds(v), "%s holds for %d", tc.bound, v)
		}
		for _, v := range tc.no {
			assert.False(t, b.Holds(v), "%s fails for %d", tc.bound, v)
		}
	}
}

func TestExpectationDecodes(t *testing.T) {
	const doc = `
verdict: fail
violations: [no_duplicate_side_effects, no_session_fork]
figures: {duplicates: ">=1", forks: 1, events_lost_silent: "0"}
`
	var e Expectation
	require.NoError(t, yaml.Unmarshal([]byte(doc), &e))
	assert.Equal(t, Expectation{
		Verdict:    Fail,
		Violations: []string{NoDuplicateSideEffects, NoSessionFork},
		Figures:    map[string]Bound{"duplicates": {">=", 1}, "forks": {"==", 1}, "events_lost_silent": {"==", 0}},
	}, e)
	require.NoError(t, e.Validate())

	var fromJSON Expectation
	require.NoError(t, json.Unmarshal([]byte(`{"verdict":"fail","violations":["no_duplicate_side_effects","no_session_fork"],
		"figures":{"duplicates":">=1","forks":1,"events_lost_silent":"0"}}`), &fromJSON))
	assert.Equal(t, e, fromJSON)
	b, err := json.Marshal(fromJSON)
	require.NoError(t, err)
	assert.JSONEq(t, `{"verdict":"fail","violations":["no_duplicate_side_effects","no_session_fork"],
		"figures":{"duplicates":">=1","forks":"==1","events_lost_silent":"==0"}}`, string(b))

	var bad Expectation
	require.ErrorIs(t, yaml.Unmarshal([]byte(`{verdict: fail, figures: {duplicates: "at least 1"}}`), &bad), ErrBound)
	require.ErrorIs(t, yaml.Unmarshal([]byte(`{verdict: fail, figures: {duplicates: [1]}}`), &bad), ErrBound)
	require.ErrorIs(t, json.Unmarshal([]byte(`{"figures":{"duplicates":true}}`), &bad), ErrBound)

	var none Expectation
	require.NoError(t, yaml.Unmarshal([]byte(`{verdict: pass, violations: []}`), &none))
	assert.NotNil(t, none.Violations, "an empty list is given, not absent")
}

func TestExpectationValidate(t *testing.T) {
	tests := []struct {
		name string
		e    Expectation
		err  error
		msg  string
	}{
		{"valid", Expectation{Verdict: Pass, Figures: map[string]Bound{"duplicates": {"==", 0}}}, nil, ""},
		{"inconclusive may be expected", Expectation{Verdict: Inconclusive}, nil, ""},
		{"no verdict", Expectation{}, ErrVerdict, "verdict: "},
		{"bad verdict", Expectation{Verdict: "passed"}, ErrVerdict, "want pass, fail or inconclusive"},
		{"unknown invariant", Expectation{Verdict: Fail, Violations: []string{NoSessionFork, "no_forks"}}, ErrUnknownInvariant, "violations[1]"},
		{"unknown figure", Expectation{Verdict: Fail, Figures: map[string]Bound{"duplicate": {"==", 1}}}, ErrUnknownFigure, "figures.duplicate: unknown figure: want one of calls, calls_ok"},
		{"a pass with violations", Expectation{Verdict: Pass, Violations: []string{NoSessionFork}}, nil, "an expected pass has no violations"},
		{"a fail with an empty set of violations", Expectation{Verdict: Fail, Violations: []string{}}, nil, "an expected fail violates something"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.e.Validate()
			if tc.msg == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.msg)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
			}
		})
	}
}

func TestExpectationMatch(t *testing.T) {
	naive := Judge(doubleChargeNaive())
	resumable := Judge(doubleChargeResumable())
	missed := Judge(keepaliveMissed())
	ge := func(n int64) Bound { return Bound{">=", n} }
	tests := []struct {
		name    string
		e       Expectation
		v       Verdict
		met     bool
		reasons []string
	}{
		{"incident reproduced", Expectation{Verdict: Fail,
			Violations: []string{NoSessionFork, NoDuplicateSideEffects, NoOrphanedResults, OutcomesResolved},
			Figures:    map[string]Bound{"duplicates": ge(1)}}, naive, true, nil},
		{"violations not given: any set", Expectation{Verdict: Fail}, naive, true, nil},
		{"violations differ", Expectation{Verdict: Fail, Violations: []string{NoDuplicateSideEffects}}, naive, false,
			[]string{"violations are [no_duplicate_side_effects, no_orphaned_results, no_session_fork, outcomes_resolved], expected [no_duplicate_side_effects]"}},
		{"figure out of bounds", Expectation{Verdict: Fail, Figures: map[string]Bound{"duplicates": {"==", 0}, "forks": {"<", 1}}}, naive, false,
			[]string{"figure duplicates is 1, expected ==0", "figure forks is 1, expected <1"}},
		{"fix passes", Expectation{Verdict: Pass, Figures: map[string]Bound{"duplicates": {"==", 0}}}, resumable, true, nil},
		{"expected pass, got fail", Expectation{Verdict: Pass}, naive, false,
			[]string{"verdict is fail, expected pass", "violations are [no_duplicate_side_effects, no_orphaned_results, no_session_fork, outcomes_resolved], expected []"}},
		{"expected fail, got inconclusive", Expectation{Verdict: Fail, Figures: map[string]Bound{"duplicates": {"==", 0}}}, missed, false,
			[]string{"verdict is inconclusive, expected fail"}},
		{"honest inconclusive", Expectation{Verdict: Inconclusive, Violations: []string{}}, missed, true, nil},
		{"invalid expectation never matches", Expectation{Verdict: Fail, Figures: map[string]Bound{"dupes": ge(1)}}, naive, false,
			[]string{"invalid expectation: figures.dupes: unknown figure: want one of calls, calls_ok, calls_failed, calls_unknown, calls_unresolved, charges, duplicates, events_emitted, events_received, events_lost_silent, events_lost_surfaced, events_unread, sessions, sessions_unclaimed, forks, orphaned_results, orphaned_surfaced, reconnects, resumes, gaps, blind_retries, cancelled_commits, cancelled_unsurfaced, tasks, task_results_fetched, worst_reconnect_ms, wall_ms, scheduled_ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			met, reasons := tc.e.Match(tc.v)
			assert.Equal(t, tc.met, met)
			assert.Equal(t, tc.reasons, reasons)
		})
	}
}

// FuzzParseBound: the parser never panics, and what it accepts renders to
// a string it parses back to the same bound.
func FuzzParseBound(f *testing.F) {
	for _, s := range []string{"0", "3", ">=1", "<=5", ">0", "<2", "==4", " >= 7", "=>1", "-1", "", "\x00", "9223372036854775808"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := ParseBound(s)
		if err != nil {
			require.ErrorIs(t, err, ErrBound)
			return
		}
		again, err := ParseBound(b.String())
		require.NoError(t, err)
		require.Equal(t, b, again)
		require.GreaterOrEqual(t, b.Value, int64(0))
	})
}

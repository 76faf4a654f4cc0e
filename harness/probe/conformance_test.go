package probe

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// validateChecks holds a checks.json to the conformance suite's format
// (modelcontextprotocol/conformance, src/types.ts: ConformanceCheck): a JSON
// array of objects with a string id, name, description and timestamp (ISO
// 8601), a status of SUCCESS, FAILURE, WARNING, SKIPPED or INFO, and
// optionally specReferences ({id, url?}), details and metadata (objects),
// errorMessage (a string) and logs (strings); no other field.
func validateChecks(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var checks []map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	require.NoError(t, dec.Decode(&checks), "checks.json is a JSON array of objects")
	allowed := []string{"id", "name", "description", "status", "timestamp", "specReferences", "details", "metadata", "errorMessage", "logs"}
	for i, c := range checks {
		for k := range c {
			assert.Contains(t, allowed, k, "check %d: field %q is not in ConformanceCheck", i, k)
		}
		for _, k := range []string{"id", "name", "description", "status", "timestamp"} {
			s, ok := c[k].(string)
			assert.True(t, ok && s != "" || k == "description" && ok, "check %d: %s must be a string", i, k)
		}
		assert.Contains(t, []string{"SUCCESS", "FAILURE", "WARNING", "SKIPPED", "INFO"}, c["status"], "check %d", i)
		_, err := time.Parse(time.RFC3339Nano, c["timestamp"].(string))
		assert.NoError(t, err, "check %d: timestamp is ISO 8601", i)
		for _, k := range []string{"details", "metadata"} {
			if v, ok := c[k]; ok {
				_, obj := v.(map[string]any)
				assert.True(t, obj, "check %d: %s must be an object", i, k)
			}
		}
		if v, ok := c["errorMessage"]; ok {
			_, s := v.(string)
			assert.True(t, s, "check %d: errorMessage must be a string", i)
		}
		if refs, ok := c["specReferences"]; ok {
			list, isList := refs.([]any)
			require.True(t, isList, "check %d: specReferences must be an array", i)
			for _, r := range list {
				ref, _ := r.(map[string]any)
				_, hasID := ref["id"].(string)
				assert.True(t, hasID, "check %d: a spec reference has an id", i)
			}
		}
	}
	return checks
}

func sampleReport(dir string) *Report {
	return &Report{Subject: "server {target: reference}", Kind: "server", Protocols: []string{"2025-11-25"}, Started: time.Now(), Dir: dir,
		Checks: []Check{
			{ID: "retention-events", Scenario: serverScenario("2025-11-25"), Protocol: "2025-11-25", Name: "retention window, in events",
				Status: Measured, Figure: "50 events", Evidence: "50 replayed; 51 not", Values: map[string]any{"events": 50}, Experiments: []string{"experiments/a"}},
			{ID: "cursor-evicted-answer", Scenario: serverScenario("2025-11-25"), Protocol: "2025-11-25", Name: "answer",
				Status: Fail, Figure: "200, silent loss", Evidence: "200 OK at head", Experiments: []string{"experiments/b"}},
			{ID: "reissue-executes-once", Scenario: serverScenario("2025-11-25"), Protocol: "2025-11-25", Name: "re-issue",
				Status: CannotTell, Why: "no ledger", Evidence: "no ledger"},
			{ID: "stream-close-cancels", Scenario: serverScenario("2026-07-28"), Protocol: "2026-07-28", Name: "cancels",
				Status: Pass, Evidence: "call_cancelled"},
		}}
}

func TestChecksJSONHasTheConformanceSuitesShape(t *testing.T) {
	dir := t.TempDir()
	rep := sampleReport(dir)
	require.NoError(t, rep.Save(dir))
	b, err := os.ReadFile(filepath.Join(dir, ChecksFile))
	require.NoError(t, err)
	checks := validateChecks(t, b)
	require.Len(t, checks, 4)
	var statuses []string
	for _, c := range checks {
		statuses = append(statuses, c["status"].(string))
	}
	assert.Equal(t, []string{"INFO", "FAILURE", "SKIPPED", "SUCCESS"}, statuses)
	assert.Equal(t, "no ledger", checks[2]["details"].(map[string]any)["cannot_tell"], "a check that cannot tell says why")
	assert.Equal(t, []any{"experiments/a"}, checks[0]["details"].(map[string]any)["experiments"], "every check links its experiments")
	for _, sc := range []string{serverScenario("2025-11-25"), serverScenario("2026-07-28")} {
		b, err := os.ReadFile(filepath.Join(dir, ChecksDir, sc, ChecksFile))
		require.NoError(t, err, "one checks.json per scenario, as the suite writes them")
		validateChecks(t, b)
	}
	// A field the suite does not know fails the validation.
	bad := &testing.T{}
	validateChecks(bad, []byte(`[{"id":"a","name":"a","description":"","status":"SUCCESS","timestamp":"2026-01-01T00:00:00Z","verdict":"x"}]`))
	assert.True(t, bad.Failed())
}

func TestBaselineMakesAnExpectedFailurePass(t *testing.T) {
	dir := t.TempDir()
	rep := sampleReport(dir)
	write := func(s string) string {
		p := filepath.Join(dir, "baseline.yml")
		require.NoError(t, os.WriteFile(p, []byte(s), 0o644))
		return p
	}
	none, err := LoadBaseline(write("server: []\n"))
	require.NoError(t, err)
	res := rep.Evaluate(none)
	assert.False(t, res.OK())
	assert.Equal(t, []string{"chaosrun-probe-server-2025-11-25:cursor-evicted-answer"}, res.Unexpected)

	b, err := LoadBaseline(write("server:\n  - chaosrun-probe-server-2025-11-25:cursor-evicted-answer\n"))
	require.NoError(t, err)
	res = rep.Evaluate(b)
	assert.True(t, res.OK(), "%+v", res)
	assert.Equal(t, []string{"chaosrun-probe-server-2025-11-25:cursor-evicted-answer"}, res.Expected)

	stale, err := LoadBaseline(write("server:\n  - chaosrun-probe-server-2025-11-25:cursor-evicted-answer\n  - chaosrun-probe-server-2026-07-28:stream-close-cancels\n"))
	require.NoError(t, err)
	res = rep.Evaluate(stale)
	assert.False(t, res.OK(), "an entry whose check now passes is stale")
	assert.Equal(t, []string{"chaosrun-probe-server-2026-07-28:stream-close-cancels"}, res.Stale)

	whole, err := LoadBaseline(write("server:\n  - chaosrun-probe-server-2025-11-25\n"))
	require.NoError(t, err)
	assert.True(t, rep.Evaluate(whole).OK(), "a whole scenario may fail")
}

func TestBaselineErrorsNameTheLine(t *testing.T) {
	dir := t.TempDir()
	for name, tc := range map[string]struct{ src, want string }{
		"space after colon": {"server:\n  - a: b\n", "baseline.yml:2: server[0]: did you write '- a: b'?"},
		"empty side":        {"server:\n  - ':x'\n", "both sides of the colon are required"},
		"redundant":         {"server:\n  - a\n  - a:x\n", "redundant"},
		"unknown section":   {"servers:\n  - a\n", "field servers not found"},
	} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "baseline.yml")
			require.NoError(t, os.WriteFile(p, []byte(tc.src), 0o644))
			_, err := LoadBaseline(p)
			require.ErrorIs(t, err, ErrBaseline)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestExactReplay(t *testing.T) {
	for _, tc := range []struct {
		got      []int64
		from, to int64
		want     bool
	}{
		{[]int64{4, 5, 6}, 3, 6, true},
		{nil, 6, 6, true},
		{[]int64{5, 6}, 3, 6, false},
		{[]int64{4, 4, 5, 6}, 3, 6, false},
		{[]int64{4, 6}, 3, 6, false},
	} {
		assert.Equal(t, tc.want, exactReplay(tc.got, tc.from, tc.to), "%v after %d up to %d", tc.got, tc.from, tc.to)
	}
}

func TestForgedCursorsAreNeverIssued(t *testing.T) {
	for last, want := range map[string]string{
		"57":                           "1000057",
		"AR4CLOQ2ZEFL4PAUX2MR526PTA_3": "AR4CLOQ2ZEFL4PAUX2MR526PTA_1000003",
		"abc":                          "abc-never-issued",
	} {
		assert.Equal(t, want, forged(last))
	}
}

func TestOrderedChecksFollowTheScorecard(t *testing.T) {
	got := ordered([]Check{{ID: "reissue-executes-once"}, {ID: "retention-events"}, {ID: "revision-offered"}})
	ids := make([]string, len(got))
	for i, c := range got {
		ids[i] = c.ID
	}
	assert.True(t, slices.Equal([]string{"revision-offered", "retention-events", "reissue-executes-once"}, ids), "%v", ids)
}

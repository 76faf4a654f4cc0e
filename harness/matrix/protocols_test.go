package matrix

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
)

const twoEras = `name: eras
description: Three clients, two servers, three scenarios, two protocols.
time_scale: 0.05
protocols: [2025-11-25, 2026-07-28]
clients:
  - {target: naive, backoff: {retries: 1}}
  - {target: go-sdk}
  - {target: mcp-go}
servers:
  - {target: reference}
  - {target: mcp-go}
workload:
  calls: [{tool: charge, args: {amount_cents: 5}, duration: 90s}]
scenarios:
  - name: cut
    description: A reset mid-call.
    faults: [{kind: reset, at: 30s}]
  - name: expired
    description: The session expires.
    needs: [sessions]
    server: {session_ttl: 1m}
    faults: [{kind: partition, at: 30s, params: {for: 2m, mode: refuse}}]
  - name: idle
    description: An idle timeout the server must take as cancellation.
    needs: [stream_cancellation]
    faults: [{kind: idle_timeout, at: 0s, params: {idle: 30s, close: reset}}]
expect:
  cut:
    naive@reference@2025-11-25: {verdict: fail}
    naive@mcp-go@2025-11-25: {verdict: fail}
    go-sdk@reference@2025-11-25: {verdict: pass}
    go-sdk@mcp-go@2025-11-25: {verdict: pass}
    mcp-go@reference@2025-11-25: {verdict: pass}
    mcp-go@mcp-go@2025-11-25: {verdict: pass}
    naive@reference@2026-07-28: {verdict: fail}
    go-sdk@reference@2026-07-28: {verdict: pass}
  expired:
    naive@reference@2025-11-25: {verdict: fail}
    naive@mcp-go@2025-11-25: {verdict: fail}
    go-sdk@reference@2025-11-25: {verdict: pass}
    go-sdk@mcp-go@2025-11-25: {verdict: pass}
    mcp-go@reference@2025-11-25: {verdict: pass}
    mcp-go@mcp-go@2025-11-25: {verdict: pass}
  idle:
    naive@reference@2026-07-28: {verdict: fail}
    go-sdk@reference@2026-07-28: {verdict: pass}
`

// TestLoadWithProtocols: a cell per scenario, protocol, client and server
// that can run; pairs that cannot speak a protocol, and scenarios that need
// what it lacks, are listed as not run with why.
func TestLoadWithProtocols(t *testing.T) {
	m, err := Load(write(t, twoEras))
	require.NoError(t, err)
	assert.Equal(t, []string{"2025-11-25", "2026-07-28"}, m.Protocols)
	require.Len(t, m.Cells, 16)
	var names []string
	for _, c := range m.Cells {
		names = append(names, c.Experiment.Name)
		assert.Equal(t, c.Protocol, c.Experiment.Client.Protocol, "the cell's protocol is its client's")
	}
	assert.Contains(t, names, "eras-cut-go-sdk-on-reference-at-2026-07-28")
	assert.Contains(t, names, "eras-idle-naive-on-reference-at-2026-07-28")
	assert.NotContains(t, names, "eras-cut-mcp-go-on-reference-at-2026-07-28")
	assert.Contains(t, m.NotRun, NotRun{Scenario: "cut", Client: "mcp-go", Server: "reference", Protocol: "2026-07-28", Why: "mcp-go does not speak 2026-07-28"})
	assert.Contains(t, m.NotRun, NotRun{Scenario: "cut", Client: "naive", Server: "mcp-go", Protocol: "2026-07-28", Why: "mcp-go does not speak 2026-07-28"})
	assert.Contains(t, m.NotRun, NotRun{Scenario: "expired", Protocol: "2026-07-28", Why: "needs sessions, and 2026-07-28 has none"})
	assert.Contains(t, m.NotRun, NotRun{Scenario: "idle", Protocol: "2025-11-25", Why: "needs a closed response stream to cancel its call, which 2025-11-25 does not do"})

	covered := 0
	for _, s := range []results.Shard{{Index: 1, Count: 2}, {Index: 2, Count: 2}} {
		part := m.Shard(s)
		covered += len(part.Cells)
		assert.Len(t, s.Select(m.Plans(spec.Overrides{})), len(part.Cells), "a shard of the cells is the shard of their plans")
		assert.Equal(t, m.NotRun, part.NotRun, "every shard's table says what is not run")
	}
	assert.Equal(t, len(m.Cells), covered)

	run := &results.Run{ID: "r", Runtime: "local"}
	for _, c := range m.Cells {
		run.Results = append(run.Results, &results.ExperimentResult{Name: c.Experiment.Name, Expected: c.Experiment.Expect.Verdict, Met: true,
			Verdict: &check.Verdict{Verdict: c.Experiment.Expect.Verdict, Violations: []string{}}})
	}
	table, err := Tabulate(m, run, nil)
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, table.WriteMarkdown(&b))
	md := b.String()
	assert.Contains(t, md, "## cut\n\nA reset mid-call.\n\n### at 2025-11-25\n\n| client \\ server | reference | mcp-go |")
	assert.Contains(t, md, "### at 2026-07-28\n\n| client \\ server | reference | mcp-go |\n|---|---|---|\n"+
		"| naive | fail | — mcp-go does not speak 2026-07-28 |\n"+
		"| go-sdk | pass | — mcp-go does not speak 2026-07-28 |\n"+
		"| mcp-go | — mcp-go does not speak 2026-07-28 | — mcp-go does not speak 2026-07-28 |\n")
	assert.Contains(t, md, "### at 2026-07-28\n\nNot run at 2026-07-28: the scenario needs sessions, and 2026-07-28 has none.\n")
	assert.Contains(t, md, "### at 2025-11-25\n\nNot run at 2025-11-25: the scenario needs a closed response stream to cancel its call, which 2025-11-25 does not do.\n")

	dir := t.TempDir()
	require.NoError(t, table.Save(dir))
	back, err := LoadTable(dir)
	require.NoError(t, err)
	assert.Equal(t, table.NotRun, back.NotRun, "matrix.json keeps what was not run, for merge")
	assert.Equal(t, table.Protocols, back.Protocols)
}

func TestLoadProtocolProblemsPointIntoTheMatrixFile(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string
		want    string
	}{
		{"unknown protocol", [2]string{"protocols: [2025-11-25, 2026-07-28]", "protocols: [2025-11-25, 2027-01-01]"},
			`m.yaml:4:25: protocols[1]: must be one of 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, got "2027-01-01"`},
		{"protocol twice", [2]string{"protocols: [2025-11-25, 2026-07-28]", "protocols: [2025-11-25, 2025-11-25]"},
			`m.yaml:4:25: protocols[1]: "2025-11-25" is listed twice`},
		{"protocols not a list", [2]string{"protocols: [2025-11-25, 2026-07-28]", "protocols: 2026-07-28"},
			"m.yaml:4:12: protocols: must be a list of protocols"},
		{"no protocols", [2]string{"protocols: [2025-11-25, 2026-07-28]", "protocols: []"},
			"m.yaml:4:12: protocols: is empty"},
		{"unknown need", [2]string{"needs: [sessions]", "needs: [session]"},
			`m.yaml:20:13: scenarios[1].needs[0]: must be one of sessions, resumption, stream_cancellation, got "session"`},
		{"missing cell at a protocol", [2]string{"    go-sdk@reference@2026-07-28: {verdict: pass}\n  expired:", "  expired:"},
			"expect.cut.go-sdk@reference@2026-07-28: missing"},
		{"expectation of a pair that cannot speak the protocol", [2]string{"  expired:\n", "    mcp-go@reference@2026-07-28: {verdict: pass}\n  expired:\n"},
			"m.yaml:37:34: expect.cut.mcp-go@reference@2026-07-28: this cell is not run (mcp-go does not speak 2026-07-28): it has nothing to expect"},
		{"expectation of a scenario not run at the protocol", [2]string{"  idle:\n", "    naive@reference@2026-07-28: {verdict: pass}\n  idle:\n"},
			"expect.expired.naive@reference@2026-07-28: this cell is not run (needs sessions, and 2026-07-28 has none)"},
		{"a key without its protocol", [2]string{"naive@reference@2025-11-25: {verdict: fail}\n    naive@mcp-go", "naive@reference: {verdict: fail}\n    naive@mcp-go"},
			"expect.cut.naive@reference: no such cell: keys are client@server@protocol of the listed targets and protocols"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			requireInvalid(t, twoEras, tc.replace, tc.want)
		})
	}
}

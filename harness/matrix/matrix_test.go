package matrix

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const small = `name: tiny
description: Two clients, two servers, one scenario.
time_scale: 0.05
clients:
  - {target: resumable, cursor: file}
  - {target: naive, backoff: {retries: 1}}
servers:
  - {target: reference}
  - {target: go-sdk}
workload:
  calls: [{tool: charge, args: {amount_cents: 5}, duration: 90s}]
scenarios:
  - name: cut
    description: A reset mid-call.
    server: {session_ttl: 1m}
    faults: [{kind: reset, at: 30s}]
expect:
  cut:
    resumable@reference: {verdict: pass}
    resumable@go-sdk: {verdict: pass}
    naive@reference: {verdict: fail, violations: [no_duplicate_side_effects]}
    naive@go-sdk: {verdict: fail}
`

func write(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func TestLoadComposesOneExperimentPerCell(t *testing.T) {
	m, err := Load(write(t, small))
	require.NoError(t, err)
	assert.Equal(t, []string{"resumable", "naive"}, m.Clients)
	assert.Equal(t, []string{"reference", "go-sdk"}, m.Servers)
	require.Len(t, m.Cells, 4)
	c := m.Cells[2]
	assert.Equal(t, "naive", c.Client)
	assert.Equal(t, "reference", c.Server)
	x := c.Experiment
	assert.Equal(t, "tiny-cut-naive-on-reference", x.Name)
	assert.Equal(t, "naive", x.Client.Target)
	assert.Equal(t, 1, x.Client.Options.(*client.Options).Backoff.Retries, "the client entry's own settings")
	assert.Equal(t, "1m0s", x.Server.Options.(*server.Options).SessionTTL.String(), "the scenario's server settings")
	require.Len(t, x.Faults, 1)
	assert.Equal(t, []string{check.NoDuplicateSideEffects}, x.Expect.Violations)

	// The composed experiment is a file of its own: what the run saves as
	// experiment.yaml loads back to the same experiment.
	back, err := spec.Parse("experiment.yaml", x.Source)
	require.NoError(t, err)
	assert.Equal(t, x.Name, back.Name)
	assert.Equal(t, x.Server.Options, back.Server.Options)

	plans := m.Plans(spec.Overrides{})
	require.Len(t, plans, 4)
	assert.Equal(t, "tiny-cut-resumable-on-reference", plans[0].Experiment.Name)
}

func TestLoadProblemsPointIntoTheMatrixFile(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string
		want    string
	}{
		{"unknown top-level key", [2]string{"time_scale: 0.05", "time_scael: 0.05"}, "m.yaml:3: field time_scael not found"},
		{"wrong type", [2]string{"expect:\n  cut:\n", "expect:\n  cut: 5\n  cot:\n"}, "m.yaml:18: cannot unmarshal !!int `5`"},
		{"unknown key in a scenario part", [2]string{"server: {session_ttl: 1m}", "server: {session_tl: 1m}"}, ":15:14: server.session_tl: unknown field"},
		{"knob a target lacks", [2]string{"  - {target: naive, backoff: {retries: 1}}", "  - {target: naive, cursor: file}"}, ":6:29: client.cursor: the naive client keeps no cursor"},
		{"bad fault", [2]string{"kind: reset", "kind: gremlin"}, ":16:21: faults[0].kind: unknown fault kind"},
		{"missing cell", [2]string{"    naive@go-sdk: {verdict: fail}\n", ""}, "expect.cut.naive@go-sdk: missing"},
		{"cell of no target", [2]string{"naive@go-sdk:", "naive@mcp-go:"}, "expect.cut.naive@mcp-go: no such cell"},
		{"unknown scenario", [2]string{"expect:\n  cut:", "expect:\n  cat:"}, "expect.cat: no scenario has this name"},
		{"duplicate target", [2]string{"  - {target: go-sdk}", "  - {target: reference}"}, `"reference" is listed twice`},
		{"bad expectation", [2]string{"resumable@go-sdk: {verdict: pass}", "resumable@go-sdk: {verdict: maybe}"}, "expect.verdict: must be one of pass, fail, inconclusive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			se := requireInvalid(t, small, tc.replace, tc.want)
			seen := map[string]bool{}
			for _, p := range se.Problems {
				assert.False(t, seen[p.String()], "each problem once, not once per cell: %s", p)
				seen[p.String()] = true
			}
		})
	}
}

func TestTabulateAndMarkdown(t *testing.T) {
	m, err := Load(write(t, small))
	require.NoError(t, err)
	res := []*results.ExperimentResult{
		{Expected: check.Pass, Met: true, Verdict: &check.Verdict{Verdict: check.Pass, Violations: []string{}}},
		{Expected: check.Pass, Met: true, Verdict: &check.Verdict{Verdict: check.Pass, Violations: []string{}, Figures: check.Figures{CallsUnknown: 1}}},
		{Expected: check.Fail, Met: true, Verdict: &check.Verdict{Verdict: check.Fail, Violations: []string{check.NoDuplicateSideEffects}}},
		{Expected: check.Fail, Error: "server did not start"},
	}
	table, err := Tabulate(m, &results.Run{ID: "r1", Runtime: "local", Results: res}, map[string]string{"go-sdk": "v1.8.0"})
	require.NoError(t, err)
	var b bytes.Buffer
	require.NoError(t, table.WriteMarkdown(&b))
	md := b.String()
	assert.Contains(t, md, "| client \\ server | reference | go-sdk |")
	assert.Contains(t, md, "| resumable | pass | pass: 1 unknown |")
	assert.Contains(t, md, "| naive | fail: duplicate | ✗ error (expected fail) |")
	assert.Contains(t, md, "go-sdk v1.8.0")

	dir := t.TempDir()
	require.NoError(t, table.Save(dir))
	assert.FileExists(t, filepath.Join(dir, MarkdownFile))
	assert.FileExists(t, filepath.Join(dir, JSONFile))

	_, err = Tabulate(m, &results.Run{Results: res[:1]}, nil)
	require.Error(t, err)
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte(twoEras))
	f.Add([]byte("name: x\nclients: [{target: naive}]\nservers: [{}]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "m.yaml")
		require.NoError(t, os.WriteFile(path, b, 0o644))
		m, err := Load(path)
		if err != nil {
			require.ErrorIs(t, err, spec.ErrInvalid)
			return
		}
		notRun := 0
		for _, n := range m.NotRun {
			if n.Client == "" {
				notRun += len(m.Clients) * len(m.Servers)
			} else {
				notRun++
			}
		}
		require.Equal(t, len(m.Clients)*len(m.Servers)*len(m.Scenarios)*len(m.tableProtocols()), len(m.Cells)+notRun)
	})
}

// requireInvalid loads base with replace[0] replaced by replace[1], and
// requires it refused as invalid with an error containing want.
func requireInvalid(t *testing.T, base string, replace [2]string, want string) *spec.Error {
	t.Helper()
	src := strings.Replace(base, replace[0], replace[1], 1)
	require.NotEqual(t, base, src, "the replacement changes the file")
	_, err := Load(write(t, src))
	require.ErrorIs(t, err, spec.ErrInvalid)
	assert.Contains(t, err.Error(), want)
	var se *spec.Error
	require.True(t, errors.As(err, &se))
	return se
}

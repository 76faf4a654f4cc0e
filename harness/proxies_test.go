package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/wire"
)

// fewFiles is a local runtime whose agents may open only limit files, as
// the runner reads it: a small limit spreads a small workload over several
// proxy agents, as 20,000 files spread 10,000 sessions.
type fewFiles struct {
	agent.Runtime
	limit uint64
}

func (f fewFiles) Capabilities() agent.Capabilities {
	c := f.Runtime.Capabilities()
	c.OpenFiles = f.limit
	return c
}

const sharedSessions = `name: shared-sessions
description: Twenty resumable clients through the proxy while every connection is reset once.
seed: 7
time_scale: 0.05
server: {target: reference, retention_events: 100}
client: {target: resumable, cursor: memory, backoff: {initial: 1s, max: 4s, retries: 20}}
workload:
  clients: 20
  calls:
    - {tool: charge, args: {amount_cents: 1000}, duration: 60s}
faults:
  - {kind: reset, at: 20s, when: {event: tools_call, tool: charge}}
expect:
  verdict: pass
  figures: {calls: 20, calls_unresolved: 0, charges: 20, duplicates: 0, forks: 0, orphaned_results: 0, blind_retries: 0}
`

// TestClientsSpreadOverProxyAgents: when the clients' connections do not
// fit one proxy agent's open files, the runner deals them over several
// (316 files hold 10 clients each: two for twenty), applies the one reset
// to every agent's proxy with one entry in the fault log, and merges their
// wires into one wire.jsonl whose connections keep numbers of their own;
// the run meets the expectation that the same experiment meets on one,
// every client resuming after the reset.
func TestClientsSpreadOverProxyAgents(t *testing.T) {
	x, err := spec.Parse("shared-sessions.yaml", []byte(sharedSessions))
	require.NoError(t, err)
	local, err := harness.LocalRuntime()
	require.NoError(t, err)
	opts := harness.Options{Out: t.TempDir(), NewRuntime: func(ctx context.Context, run, exp string) (agent.Runtime, error) {
		rt, err := local(ctx, run, exp)
		return fewFiles{Runtime: rt, limit: 316}, err
	}}
	run, err := harness.Execute(context.Background(), opts, []*spec.Plan{x.Plan(spec.Overrides{})})
	require.NoError(t, err)
	res := run.Results[0]
	require.Empty(t, res.Error)
	assert.True(t, res.Met, "%v", res.Reasons)
	require.NotNil(t, res.Verdict)
	assert.GreaterOrEqual(t, res.Verdict.Figures.Resumes, int64(20), "the reset reached both proxies: every client resumed")

	raw, err := os.ReadFile(filepath.Join(res.Dir, harness.UsageFile))
	require.NoError(t, err)
	var usage []agent.Usage
	require.NoError(t, json.Unmarshal(raw, &usage))
	var agents []string
	for _, u := range usage {
		agents = append(agents, u.Agent)
	}
	assert.Equal(t, []string{"ledger", "server", "proxy-1", "proxy-2", "client"}, agents)

	recs, err := wire.Load(filepath.Join(res.Dir, wire.File))
	require.NoError(t, err)
	numbers, opens := map[int64]bool{}, map[int64]int{}
	for _, r := range recs {
		assert.False(t, numbers[r.N], "record number %d twice", r.N)
		numbers[r.N] = true
		if r.Kind == wire.KindOpen && r.Edge == wire.EdgeClient {
			opens[r.Conn%2]++
		}
	}
	assert.GreaterOrEqual(t, opens[0], 10, "proxy-2's connections (even numbers)")
	assert.GreaterOrEqual(t, opens[1], 10, "proxy-1's connections (odd numbers)")

	entries, err := faults.LoadLog(filepath.Join(res.Dir, check.FaultsFile))
	require.NoError(t, err)
	var resets int
	for _, e := range entries {
		if e.Kind == "reset" {
			resets++
			assert.Empty(t, e.Error)
		}
	}
	assert.Equal(t, 1, resets, "one reset, applied to both proxies")
}

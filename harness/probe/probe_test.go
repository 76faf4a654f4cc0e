package probe

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Each test runs the smallest part of the battery that proves its claim
// against a server configured to have the property measured; the figures
// come from the runs' records, so a probe that read the configuration
// instead could not pass them all.

func TestReferenceRetentionInEvents(t *testing.T) {
	skipShort(t)
	rep, c := probeOf(t, Options{Server: ownServer(map[string]any{"target": "reference", "retention_events": 50}),
		Protocols: []string{mcp.Version20251125}, Only: []string{PartEvents}})
	ret := c["retention-events"]
	require.Equal(t, Measured, ret.Status, ret.Evidence)
	assert.EqualValues(t, 50, ret.Values["events"], "retention_events: 50 is a window of 50 events: %s", ret.Evidence)
	ans := c["cursor-evicted-answer"]
	assert.Equal(t, Pass, ans.Status, ans.Evidence)
	assert.Equal(t, "410", ans.Figure)
	assert.Contains(t, ans.Evidence, "resume_window_exceeded")
	// Every check links experiments that `chaosrun report` judges again
	// to the verdict they were saved with.
	require.NotEmpty(t, ret.Experiments)
	again, err := results.Rejudge(filepath.Join(rep.Dir, lab.ExperimentsDir))
	require.NoError(t, err)
	for _, r := range again.Results {
		assert.True(t, r.Met, "%s: %v %s", r.Name, r.Reasons, r.Error)
	}
	for _, e := range ret.Experiments {
		assert.DirExists(t, filepath.Join(rep.Dir, e))
	}
}

func TestReferenceSilentHeadIsSilentLoss(t *testing.T) {
	skipShort(t)
	_, c := probeOf(t, Options{Server: ownServer(map[string]any{"target": "reference", "retention_events": 50, "on_unresumable": "silent_head"}),
		Protocols: []string{mcp.Version20251125}, Only: []string{PartEvents}, Limits: Limits{SearchRuns: 1}})
	ans := c["cursor-evicted-answer"]
	assert.Equal(t, Fail, ans.Status, ans.Evidence)
	assert.Equal(t, "200, silent loss", ans.Figure)
}

func TestReferenceRetentionInTimeAndIdleTTL(t *testing.T) {
	skipShort(t)
	_, c := probeOf(t, Options{Server: ownServer(map[string]any{"target": "reference", "retention_age": "30s", "session_ttl": "1m"}),
		Protocols: []string{mcp.Version20251125}, Only: []string{PartTime}, Limits: Limits{MaxAway: 2 * time.Minute}})
	ret, ttl := c["retention-seconds"], c["session-idle-ttl"]
	require.Equal(t, Measured, ret.Status, ret.Evidence)
	require.Equal(t, Measured, ttl.Status, ttl.Evidence)
	assert.InEpsilon(t, 30, ret.Values["seconds"], 0.10, "a 30 s store: %s", ret.Evidence)
	assert.InEpsilon(t, 60, ttl.Values["seconds"], 0.10, "a 1 m TTL: %s", ttl.Evidence)
	assert.Equal(t, Pass, c["session-expired-404"].Status, c["session-expired-404"].Evidence)
	assert.Equal(t, Fail, c["retention-outlives-session"].Status, "30 s of retention in a session that idles for a minute")
}

func TestReferenceCancellationPerRevision(t *testing.T) {
	skipShort(t)
	_, c := probeOf(t, Options{Server: ownServer(map[string]any{"target": "reference"}),
		Protocols: []string{mcp.Version20251125, mcp.Version20260728}, Only: []string{PartStreamClose}})
	for id, want := range map[string]Status{
		"2025-11-25/stream-close-not-cancelled": Pass,
		"2025-11-25/result-after-cut-kept":      Pass,
		"2026-07-28/stream-close-cancels":       Pass,
		"2026-07-28/revision-offered":           Pass,
	} {
		assert.Equal(t, want, c[id].Status, "%s: %s", id, c[id].Evidence)
	}
}

// The SDKs' own behaviour, as docs/sdk-behaviour.md states it: both answer
// an evicted Last-Event-ID with 400 in plain text; the go-sdk server runs a
// call on after its stream closes at 2026-07-28; mcp-go's call stream
// carries no id a client could resume from.
func TestSDKServersAgreeWithTheirNotes(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct {
		target    string
		protocols []string
		body      string
		want      map[string]Status
	}{
		{"go-sdk", []string{mcp.Version20251125, mcp.Version20260728}, "400 Bad Request failed to replay events",
			map[string]Status{"2025-11-25/result-after-cut-kept": Pass, "2026-07-28/stream-close-cancels": Fail}},
		{"mcp-go", []string{mcp.Version20251125}, "400 Bad Request Unknown Last-Event-ID",
			map[string]Status{"2025-11-25/result-after-cut-kept": Fail}},
	} {
		t.Run(tc.target, func(t *testing.T) {
			_, c := probeOf(t, Options{Server: ownServer(map[string]any{"target": tc.target, "retention_events": 100}),
				Protocols: tc.protocols, Only: []string{PartEvents, PartStreamClose}, Limits: Limits{SearchRuns: 1}})
			ans := c["cursor-evicted-answer"]
			assert.Equal(t, Fail, ans.Status, ans.Evidence)
			assert.Contains(t, ans.Evidence, tc.body)
			assert.Contains(t, ans.Evidence, "plain text")
			for id, want := range tc.want {
				assert.Equal(t, want, c[id].Status, "%s: %s", id, c[id].Evidence)
			}
		})
	}
}

// The black-box shops, put under the probe by their command lines alone:
// the go-sdk shop's store replays the result after a cut; the mcp-go shop
// with its own bounded store replays what it holds with a 200 and no word
// of the gap, and does not replay a result.
func TestShopsAgreeWithTheirExperiments(t *testing.T) {
	skipShort(t)
	bin := buildShops(t)
	rows := lab.Call{Tool: "export_rows", Args: map[string]any{"rows": 200}, Duration: "40s"}
	order := lab.Call{Tool: "place_order", Args: map[string]any{"order_id": "order-{{call}}", "amount_cents": 100}, Key: "order_id", Duration: "20s"}
	for _, tc := range []struct {
		name string
		argv []string
		want map[string]Status
	}{
		{"shop-gosdk", []string{filepath.Join(bin, "shop-gosdk"), "--addr", "{addr}", "--work", "1s"},
			map[string]Status{"result-after-cut-kept": Pass, "resume-replays-missed": Pass, "reissue-executes-once": CannotTell}},
		{"shop-mcpgo", []string{filepath.Join(bin, "shop-mcpgo"), "--addr", "{addr}", "--work", "1s", "--keep-events", "50"},
			map[string]Status{"result-after-cut-kept": Fail, "cursor-evicted-answer": Fail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, c := probeOf(t, Options{Server: Server{Spec: map[string]any{"target": "command", "command": tc.argv}, Stream: rows, Effect: order},
				Protocols: []string{mcp.Version20251125}, Only: []string{PartEvents, PartStreamClose, PartReissue}, Limits: Limits{SearchRuns: 1}})
			for id, want := range tc.want {
				assert.Equal(t, want, c[id].Status, "%s: %s", id, c[id].Evidence)
			}
			if tc.name == "shop-mcpgo" {
				assert.Equal(t, "200, silent loss", c["cursor-evicted-answer"].Figure)
			}
		})
	}
}

// The naive and resumable clients differ on every client check.
func TestClientsToldApart(t *testing.T) {
	skipShort(t)
	status := map[string]map[string]Status{}
	for _, target := range []string{"naive", "resumable"} {
		spec := map[string]any{"target": target, "backoff": map[string]any{"initial": "1s", "max": "2s", "retries": 30}}
		if target == "resumable" {
			spec["cursor"] = "file"
		}
		rep, _ := probeOf(t, Options{Client: &Client{Spec: spec}})
		status[target] = map[string]Status{}
		for _, c := range rep.Checks {
			status[target][c.ID] = c.Status
			t.Logf("%s %s %s: %s", target, c.Status.Mark(), c.ID, c.Evidence)
		}
	}
	require.Len(t, status["naive"], 7)
	for id, s := range status["resumable"] {
		assert.Equal(t, Pass, s, "the resumable client with a durable cursor passes %s", id)
		assert.Equal(t, Fail, status["naive"][id], "the naive client fails %s", id)
	}
}

package e2e_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

var quick = workload.Backoff{Initial: 10 * time.Millisecond, Max: 40 * time.Millisecond, Retries: 40}

func forOrder(id string) func(sideeffects.Record) bool {
	return func(r sideeffects.Record) bool { return r.OrderID == id }
}

func TestResumableSurvivesCutMidCharge(t *testing.T) {
	e := newEnv(t, server.Config{Retry: 20 * time.Millisecond})
	opts := e.options(quick)
	opts.Cursor, opts.CursorDir = client.CursorFile, t.TempDir()
	done := e.run(client.TargetResumable, opts, charge("order-1", 300*time.Millisecond))
	e.hist.await(t, "priming event", isEvent("order-1", 0))
	require.Eventually(t, func() bool { return e.inflight() == 1 }, runTimeout, time.Millisecond, "the charge never started")
	e.cut()
	require.NoError(t, <-done)

	recs := e.hist.records(t)
	okRecs := kinds(recs, history.KindOK)
	require.Len(t, okRecs, 1, "history:\n%s", e.hist.bytes())
	assert.Len(t, kinds(recs, history.KindInvoke), 1, "invoked once")
	assert.Len(t, kinds(recs, history.KindSessionNew), 1, "one session")
	assert.NotEmpty(t, kinds(recs, history.KindStreamBreak), "the cut broke the stream")
	assert.NotEmpty(t, kinds(recs, history.KindResume))
	assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")), "exactly one charge")
	written := e.ledger.Records()
	var resultID int64
	for _, r := range written {
		if r.Kind == sideeffects.KindResultWritten && r.RequestID == okRecs[0].RequestID {
			resultID = r.EventID
		}
	}
	assert.Equal(t, resultID, okRecs[0].EventID, "the original result, received once")
}

func TestNaiveChargesTwiceUnderCut(t *testing.T) {
	e := newEnv(t, server.Config{Retry: 20 * time.Millisecond})
	done := e.run(client.TargetNaive, e.options(quick), charge("order-1", 300*time.Millisecond))
	e.hist.await(t, "priming event", isEvent("order-1", 0))
	e.cut()
	require.NoError(t, <-done)

	recs := e.hist.records(t)
	require.Len(t, kinds(recs, history.KindOK), 1, "history:\n%s", e.hist.bytes())
	assert.Len(t, kinds(recs, history.KindInvoke), 2, "the call was invoked again")
	sessions := kinds(recs, history.KindSessionNew)
	require.Len(t, sessions, 2, "a second session for the same client")
	lost := kinds(recs, history.KindSessionLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "abandoned", lost[0].Reason)
	require.Eventually(t, func() bool {
		return e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")) == 2
	}, runTimeout, time.Millisecond, "the incident: the card is charged twice")
	require.Eventually(t, func() bool {
		return e.ledgerCount(sideeffects.KindResultWritten, func(r sideeffects.Record) bool { return r.Session == sessions[0].Session }) == 1
	}, runTimeout, time.Millisecond, "the first result went to the abandoned session's log")
}

func TestEvictionPastRetention(t *testing.T) {
	tests := []struct {
		mode    string
		surface bool
	}{
		{server.OnUnresumableGone, true},
		{server.OnUnresumableSilentHead, false},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			e := newEnv(t, server.Config{RetentionEvents: 5, OnUnresumable: tc.mode, Retry: 5 * time.Millisecond})
			opts := e.options(workload.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond, Retries: 100})
			// 200 events 10ms apart; the partition heals after 20, leaving the
			// tool running long enough for a loaded machine to reconnect (with
			// 80 a reconnect under a parallel docker run once came too late).
			done := e.run(client.TargetResumable, opts, chatty("feed-1", 200, 2*time.Second))
			e.hist.await(t, "third progress event", isEvent("feed-1", 3))
			e.partition(func() bool {
				return e.ledgerCount(sideeffects.KindEventEmitted, func(r sideeffects.Record) bool { return r.Seq >= 20 }) > 0
			})
			require.NoError(t, <-done)

			recs := e.hist.records(t)
			okRecs := kinds(recs, history.KindOK)
			require.Len(t, okRecs, 1, "history:\n%s", e.hist.bytes())
			missing := e.missing(recs, okRecs[0])
			require.NotEmpty(t, missing, "events were evicted during the partition; history:\n%s", e.hist.bytes())
			gaps := kinds(recs, history.KindGap)
			if !tc.surface {
				assert.Empty(t, gaps, "silent_head: the client is told nothing")
				return
			}
			// A reader that falls behind retention while connected (a loaded
			// machine) is cut and meets another 410: one gap per loss.
			require.NotEmpty(t, gaps, "history:\n%s", e.hist.bytes())
			for _, id := range missing {
				inside := false
				for _, g := range gaps {
					assert.Equal(t, "resume_window_exceeded", g.Reason)
					inside = inside || id > g.FromEventID && id <= g.ToEventID
				}
				assert.True(t, inside, "event %d lost outside every surfaced gap", id)
			}
		})
	}
}

// missing lists the ids of events the server emitted on the call's stream
// that the client never received.
func (e *env) missing(recs []history.Record, ok history.Record) []int64 {
	got := map[int64]bool{ok.EventID: true}
	for _, r := range kinds(recs, history.KindEvent) {
		if r.RequestID == ok.RequestID {
			got[r.EventID] = true
		}
	}
	var out []int64
	for _, r := range e.ledger.Records() {
		if r.Kind == sideeffects.KindEventEmitted && r.Session == ok.Session && r.RequestID == ok.RequestID && !got[r.EventID] {
			out = append(out, r.EventID)
		}
	}
	return out
}

func TestFileStoreAcrossServerRestart(t *testing.T) {
	tests := []struct {
		name    string
		crash   bool
		outcome history.Kind
		charges int
		// A crash cuts the charge short, so it can be long; a graceful
		// shutdown waits for it.
		duration time.Duration
	}{
		{"graceful", false, history.KindOK, 1, 200 * time.Millisecond},
		{"crash", true, history.KindUnknown, 0, 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, server.Config{
				EventStore: server.EventStoreFile, StorePath: filepath.Join(t.TempDir(), "events.log"),
				Retry: 10 * time.Millisecond,
			})
			opts := e.options(quick)
			opts.Cursor, opts.CursorDir = client.CursorFile, t.TempDir()
			done := e.run(client.TargetResumable, opts, charge("order-1", tc.duration))
			e.hist.await(t, "priming event", isEvent("order-1", 0))
			e.stopServer(tc.crash)
			e.startServer(e.addr)
			require.NoError(t, <-done)

			recs := e.hist.records(t)
			out := kinds(recs, tc.outcome)
			require.Len(t, out, 1, "history:\n%s", e.hist.bytes())
			sessions := kinds(recs, history.KindSessionNew)
			require.Len(t, sessions, 1, "the session outlived the server process")
			assert.Equal(t, sessions[0].Session, out[0].Session)
			assert.Len(t, kinds(recs, history.KindInvoke), 1)
			assert.Equal(t, tc.charges, e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")))
			if tc.crash {
				assert.Equal(t, client.ErrorInterrupted, out[0].Reason)
			}
		})
	}
}

func TestSessionExpiredMidCall(t *testing.T) {
	tests := []struct {
		target  string
		charges int
	}{
		{client.TargetResumable, 1},
		{client.TargetNaive, 2},
	}
	for _, tc := range tests {
		t.Run(tc.target, func(t *testing.T) {
			e := newEnv(t, server.Config{Retry: 10 * time.Millisecond})
			done := e.run(tc.target, e.options(quick), charge("order-1", 200*time.Millisecond), charge("order-2", 0))
			e.hist.await(t, "priming event", isEvent("order-1", 0))
			e.partition(func() bool { return e.control("expire") })
			require.NoError(t, <-done)

			recs := e.hist.records(t)
			require.Eventually(t, func() bool {
				return e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")) == tc.charges
			}, runTimeout, time.Millisecond, "history:\n%s", e.hist.bytes())
			assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, forOrder("order-2")), "the next call is made")
			if tc.target == client.TargetResumable {
				unk := kinds(recs, history.KindUnknown)
				require.Len(t, unk, 1)
				assert.Equal(t, "order-1", unk[0].OrderID)
				lost := kinds(recs, history.KindSessionLost)
				require.Len(t, lost, 1)
				assert.Equal(t, "status_404", lost[0].Reason)
			}
		})
	}
}

func TestTerminateStopsResumableClient(t *testing.T) {
	e := newEnv(t, server.Config{Retry: 10 * time.Millisecond})
	done := e.run(client.TargetResumable, e.options(quick), charge("order-1", 200*time.Millisecond), charge("order-2", 0))
	e.hist.await(t, "priming event", isEvent("order-1", 0))
	require.True(t, e.control("terminate"))
	require.NoError(t, <-done)

	recs := e.hist.records(t)
	unk := kinds(recs, history.KindUnknown)
	require.Len(t, unk, 1, "history:\n%s", e.hist.bytes())
	assert.Equal(t, "order-1", unk[0].OrderID)
	lost := kinds(recs, history.KindSessionLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "close_event", lost[0].Reason)
	assert.Len(t, kinds(recs, history.KindInvoke), 1, "no call after the close event")
	assert.Empty(t, kinds(recs, history.KindReconnect), "no reconnect after the close event")
}

// control posts to the server's control endpoint directly (not through the
// proxy) and reports whether it ended at least one session.
func (e *env) control(action string) bool {
	resp, err := http.Post("http://"+e.addr+"/control/"+action, "application/json", nil)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	require.Equal(e.t, http.StatusOK, resp.StatusCode, strconv.Quote(action))
	var body struct {
		Sessions []string `json:"sessions"`
	}
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&body))
	return len(body.Sessions) > 0
}

func TestResumableClientRestartMidCharge(t *testing.T) {
	tests := []struct {
		cursor  string
		charges int
	}{
		{client.CursorFile, 1},
		{client.CursorMemory, 2},
	}
	for _, tc := range tests {
		t.Run(tc.cursor, func(t *testing.T) {
			e := newEnv(t, server.Config{Retry: 10 * time.Millisecond})
			opts := e.options(quick)
			opts.Cursor, opts.CursorDir = tc.cursor, t.TempDir()
			call := charge("order-1", 200*time.Millisecond)
			ctx, kill := context.WithCancel(context.Background())
			killed := make(chan error, 1)
			go func() {
				killed <- client.Run(ctx, client.TargetResumable, opts, workload.Client{ID: "c1", Calls: []workload.Call{call}})
			}()
			e.hist.await(t, "priming event", isEvent("order-1", 0))
			kill() // the process dies mid-call
			require.ErrorIs(t, <-killed, context.Canceled)
			require.NoError(t, <-e.run(client.TargetResumable, opts, call))

			recs := e.hist.records(t)
			require.Len(t, kinds(recs, history.KindOK), 1, "history:\n%s", e.hist.bytes())
			require.Eventually(t, func() bool {
				return e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")) == tc.charges
			}, runTimeout, time.Millisecond, "history:\n%s", e.hist.bytes())
			if tc.cursor == client.CursorFile {
				assert.Len(t, kinds(recs, history.KindInvoke), 1, "the restarted client resumes instead of invoking again")
				assert.Len(t, kinds(recs, history.KindSessionNew), 1, "and keeps its session")
			}
		})
	}
}

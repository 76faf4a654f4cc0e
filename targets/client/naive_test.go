package client

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

func TestNaiveReinitializesAndRetries(t *testing.T) {
	tests := []struct {
		name  string
		first func(t *testing.T, w http.ResponseWriter, m mcp.Message)
		class string
	}{
		{"reset", func(t *testing.T, w http.ResponseWriter, m mcp.Message) {
			sse(w)
			priming(t, w, "1", 0)
			progress(t, w, "2", token(t, m), 1)
			reset(t, w)
		}, "reset"},
		{"503", func(_ *testing.T, w http.ResponseWriter, _ mcp.Message) {
			http.Error(w, "lb", http.StatusServiceUnavailable)
		}, "status_503"},
		{"close event", func(t *testing.T, w http.ResponseWriter, _ mcp.Message) {
			sse(w)
			send(t, w, mcp.Event{Type: mcp.EventClose, Data: []byte("{}")})
		}, "close_event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t)
			s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, n int) {
				if n == 1 {
					tc.first(t, w, m)
					return
				}
				sse(w)
				result(t, w, "1", m.ID, okResult())
			}
			g := newRig(s.url())
			require.NoError(t, runClient(t, TargetNaive, g, charge("c1-1")))

			calls := s.requests(mcp.MethodToolsCall)
			require.Len(t, calls, 2, "the same call is invoked again")
			assert.Equal(t, "s1", calls[0].session)
			assert.Equal(t, "s2", calls[1].session, "on a new session")
			assert.Empty(t, s.requests(http.MethodGet), "the naive client never resumes")
			for _, r := range s.requests(mcp.MethodToolsCall) {
				assert.False(t, r.hasLastID)
			}
			recs := g.history(t)
			brk := kinds(recs, history.KindStreamBreak)
			require.Len(t, brk, 1)
			assert.Equal(t, tc.class, brk[0].Reason)
			lost := kinds(recs, history.KindSessionLost)
			require.Len(t, lost, 1)
			assert.Equal(t, "abandoned", lost[0].Reason)
			assert.Equal(t, "s1", lost[0].Session)
			inv := kinds(recs, history.KindInvoke)
			require.Len(t, inv, 2)
			assert.Equal(t, []int{1, 2}, []int{inv[0].Attempt, inv[1].Attempt})
			assert.Equal(t, inv[0].OrderID, inv[1].OrderID, "a retry keeps its order id")
			require.Len(t, kinds(recs, history.KindOK), 1)
		})
	}
}

func TestNaiveGivesUp(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}
	g := newRig(s.url())
	g.opts.Backoff = workload.Backoff{Initial: 20 * time.Millisecond, Retries: 2}
	require.NoError(t, runClient(t, TargetNaive, g, charge("c1-1")))

	calls := s.requests(mcp.MethodToolsCall)
	require.Len(t, calls, 3, "one call and two retries")
	for i := 1; i < len(calls); i++ {
		assert.GreaterOrEqual(t, calls[i].at.Sub(calls[i-1].at), 20*time.Millisecond, "Backoff.Initial between attempts")
	}
	recs := g.history(t)
	fail := kinds(recs, history.KindFail)
	require.Len(t, fail, 1)
	assert.Equal(t, "c1-1", fail[0].OrderID)
	assert.Contains(t, fail[0].Reason, "status_500")
	assert.Len(t, kinds(recs, history.KindSessionNew), 3)
}

func TestNaiveCancelledMidCallIsUnknown(t *testing.T) {
	s := newScript(t)
	sent := make(chan struct{}, 1)
	blockingCall(t, s, sent)
	g := newRig(s.url())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Naive(ctx, g.opts, workload.Client{ID: "c1", Calls: []workload.Call{charge("c1-1")}}) }()
	<-sent
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	unk := kinds(g.history(t), history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Equal(t, "c1-1", unk[0].Call)
}

func TestRunRejectsUnknownTargetAndOptions(t *testing.T) {
	g := newRig("http://127.0.0.1:1/mcp")
	require.ErrorContains(t, runClient(t, "clever", g), "unknown target")
	g.opts.Cursor = "redis"
	require.ErrorContains(t, runClient(t, TargetResumable, g), "unknown cursor store")
	g.opts.Cursor = CursorFile
	require.ErrorContains(t, runClient(t, TargetResumable, g), "cursor directory")
	g.opts.History = nil
	require.ErrorContains(t, runClient(t, TargetNaive, g), "history")
}

func TestResumableInitializeFailure(t *testing.T) {
	srv := newScript(t)
	srv.srv.Close() // nothing listens: every initialize fails
	g := newRig(srv.url())
	g.opts.Backoff.Retries = 2
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")), "a server that cannot be reached is what the run records, not a failure of the client")
	recs := g.history(t)
	assert.Empty(t, kinds(recs, history.KindInvoke))
	fails := kinds(recs, history.KindFail)
	require.Len(t, fails, 1)
	assert.Contains(t, fails[0].Reason, "no session could be opened after 3 attempts")
	require.Len(t, kinds(recs, history.KindClientStop), 1)
}

func TestNaiveCancelledBetweenAttemptsIsUnknown(t *testing.T) {
	s := newScript(t)
	failed := make(chan struct{}, 1)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		http.Error(w, "boom", http.StatusInternalServerError)
		failed <- struct{}{}
	}
	g := newRig(s.url())
	g.opts.Backoff = workload.Backoff{Initial: time.Minute, Retries: 3}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Naive(ctx, g.opts, workload.Client{ID: "c1", Calls: []workload.Call{charge("c1-1")}}) }()
	<-failed
	require.Eventually(t, func() bool { return len(kinds(g.history(t), history.KindSessionLost)) == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	unk := kinds(g.history(t), history.KindUnknown)
	require.Len(t, unk, 1, "a call abandoned while waiting to retry is not left unresolved")
	assert.Equal(t, "c1-1", unk[0].Call)
}

package client

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// lastCallID is the id of the latest tools/call, the one a resuming GET
// belongs to: the scripts below only ever have one call in flight.
func lastCallID(s *script) json.RawMessage {
	calls := s.requests(mcp.MethodToolsCall)
	return calls[len(calls)-1].msg.ID
}

func TestResumableReconnectsAfterReset(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
		sse(w)
		priming(t, w, "1", 5*time.Millisecond)
		progress(t, w, "2", token(t, m), 1)
		reset(t, w)
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
		sse(w)
		progress(t, w, "3", json.RawMessage(`2`), 2)
		result(t, w, "4", lastCallID(s), okResult())
	}
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))

	gets := s.requests(http.MethodGet)
	require.Len(t, gets, 1)
	assert.Equal(t, "2", gets[0].lastEventID)
	assert.Equal(t, "s1", gets[0].session)
	assert.Equal(t, mcp.LatestVersion, gets[0].protocol)
	assert.Equal(t, mcp.ContentTypeSSE, gets[0].accept)
	require.Len(t, s.requests(mcp.MethodToolsCall), 1, "the charge is invoked once")
	require.Len(t, s.requests(mcp.MethodInitialize), 1, "the session is kept")

	recs := g.history(t)
	require.Len(t, kinds(recs, history.KindOK), 1)
	ok := kinds(recs, history.KindOK)[0]
	assert.Equal(t, int64(4), ok.EventID)
	assert.Equal(t, "c1-1", ok.OrderID)
	assert.Equal(t, "s1", ok.Session)
	brk := kinds(recs, history.KindStreamBreak)
	require.Len(t, brk, 1)
	assert.Contains(t, []string{"reset", "eof"}, brk[0].Reason)
	rc := kinds(recs, history.KindReconnect)
	require.Len(t, rc, 1)
	assert.Equal(t, "ok", rc[0].Result)
	assert.Equal(t, int64(2), rc[0].LastEventID)
	assert.Equal(t, 1, rc[0].Attempt)
	require.Len(t, kinds(recs, history.KindResume), 1)
	var seqs []int64
	for _, e := range kinds(recs, history.KindEvent) {
		seqs = append(seqs, e.Seq)
	}
	assert.Equal(t, []int64{0, 1, 2}, seqs, "priming, then progress 1 and 2")
	assert.Equal(t, "priming", kinds(recs, history.KindEvent)[0].Detail)
}

func TestResumableRequestHeaders(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
		sse(w)
		result(t, w, "1", m.ID, okResult())
	}
	g := newRig(s.url())
	g.opts.Protocol = mcp.Version20250618
	require.NoError(t, runClient(t, TargetResumable, g, charge("o-1")))

	init := s.requests(mcp.MethodInitialize)
	require.Len(t, init, 1)
	var p mcp.InitializeParams
	require.NoError(t, json.Unmarshal(init[0].msg.Params, &p))
	assert.Equal(t, "c1", p.ClientInfo.Name)
	assert.Equal(t, mcp.Version20250618, p.ProtocolVersion)
	assert.Empty(t, init[0].session)
	for _, r := range append(s.requests(mcp.MethodInitialized), s.requests(mcp.MethodToolsCall)...) {
		assert.Equal(t, "s1", r.session, r.rpc)
		assert.Equal(t, mcp.Version20250618, r.protocol, r.rpc)
		assert.Equal(t, "application/json, text/event-stream", r.accept, r.rpc)
		assert.False(t, r.hasLastID)
	}
	var cp mcp.CallParams
	call := s.requests(mcp.MethodToolsCall)[0]
	require.NoError(t, json.Unmarshal(call.msg.Params, &cp))
	assert.Equal(t, mcp.ToolCharge, cp.Name)
	assert.JSONEq(t, `{"amount_cents":4999,"order_id":"o-1","duration_ms":50}`, string(cp.Arguments))
	require.NotNil(t, cp.Meta)
	assert.NotNil(t, cp.Meta.ProgressToken)
}

func TestResumableHonoursServerRetry(t *testing.T) {
	const retry = 120 * time.Millisecond
	s := newScript(t)
	var cut time.Time
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		sse(w)
		priming(t, w, "1", retry)
		cut = time.Now()
		reset(t, w)
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
		sse(w)
		result(t, w, "2", lastCallID(s), okResult())
	}
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))

	gets := s.requests(http.MethodGet)
	require.Len(t, gets, 1)
	assert.GreaterOrEqual(t, gets[0].at.Sub(cut), retry, "reconnected sooner than the server's retry field")
	rc := kinds(g.history(t), history.KindReconnect)
	require.Len(t, rc, 1)
	assert.GreaterOrEqual(t, rc[0].DelayUS, retry.Microseconds())
}

func TestResumable404IsUnknownAndNotRetried(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, n int) {
		if n == 1 {
			sse(w)
			priming(t, w, "1", 0)
			reset(t, w)
			return
		}
		sse(w)
		result(t, w, "1", m.ID, okResult())
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) { http.Error(w, "no session", http.StatusNotFound) }
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1"), charge("c1-2")))

	calls := s.requests(mcp.MethodToolsCall)
	require.Len(t, calls, 2, "the lost charge is not invoked again; the next call is made")
	assert.Equal(t, "s2", calls[1].session, "the next call runs on a new session")
	recs := g.history(t)
	unk := kinds(recs, history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Equal(t, "c1-1", unk[0].Call)
	lost := kinds(recs, history.KindSessionLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "status_404", lost[0].Reason)
	assert.Equal(t, "s1", lost[0].Session)
	require.Len(t, kinds(recs, history.KindSessionNew), 2)
	require.Len(t, kinds(recs, history.KindOK), 1)
	assert.Equal(t, "c1-2", kinds(recs, history.KindOK)[0].Call)
}

func TestResumable404ReinvokesIdempotentCall(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, n int) {
		if n == 1 {
			http.Error(w, "no session", http.StatusNotFound)
			return
		}
		sse(w)
		result(t, w, "1", m.ID, okResult())
	}
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, chatty("c1-1", 3)))

	require.Len(t, s.requests(mcp.MethodToolsCall), 2)
	recs := g.history(t)
	inv := kinds(recs, history.KindInvoke)
	require.Len(t, inv, 2)
	assert.Equal(t, []int{1, 2}, []int{inv[0].Attempt, inv[1].Attempt})
	assert.Equal(t, "s2", inv[1].Session)
	assert.Empty(t, kinds(recs, history.KindUnknown))
	require.Len(t, kinds(recs, history.KindOK), 1)
}

func TestResumableGapReconnectsAtHead(t *testing.T) {
	for _, status := range []int{http.StatusGone, http.StatusConflict} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			s := newScript(t)
			s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
				sse(w)
				priming(t, w, "1", 0)
				progress(t, w, "2", token(t, m), 1)
				reset(t, w)
			}
			s.onGet = func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					w.Header().Set("Content-Type", mcp.ContentTypeJSON)
					w.WriteHeader(status)
					_, _ = w.Write([]byte(`{"error":"resume_window_exceeded","last_event_id":2,"oldest_retained_id":5,"head_event_id":7}`))
					return
				}
				sse(w)
				progress(t, w, "8", json.RawMessage(`2`), 7)
				result(t, w, "9", lastCallID(s), okResult())
			}
			g := newRig(s.url())
			require.NoError(t, runClient(t, TargetResumable, g, chatty("c1-1", 7)))

			gets := s.requests(http.MethodGet)
			require.Len(t, gets, 2)
			assert.Equal(t, "2", gets[0].lastEventID)
			assert.Equal(t, "7", gets[1].lastEventID, "the second GET resumes at the head")
			recs := g.history(t)
			gaps := kinds(recs, history.KindGap)
			require.Len(t, gaps, 1)
			assert.Equal(t, int64(2), gaps[0].FromEventID)
			assert.Equal(t, int64(7), gaps[0].ToEventID)
			assert.Equal(t, "resume_window_exceeded", gaps[0].Reason)
			rc := kinds(recs, history.KindReconnect)
			require.Len(t, rc, 2)
			assert.Equal(t, "status_"+strconv.Itoa(status), rc[0].Result)
			assert.Equal(t, int64(7), rc[1].LastEventID)
			require.Len(t, kinds(recs, history.KindOK), 1)
		})
	}
}

// TestResumableLostWithoutHeadNeverLoops: a 409 or 410 naming no head id
// is surfaced as an open-ended gap and an unknown outcome after one try,
// never retried on the same cursor.
func TestResumableLostWithoutHeadNeverLoops(t *testing.T) {
	for _, status := range []int{http.StatusConflict, http.StatusGone} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			s := newScript(t)
			s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
				sse(w)
				priming(t, w, "1", 0)
				reset(t, w)
			}
			s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
				w.Header().Set("Content-Type", mcp.ContentTypeJSON)
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"error":"stream_attached"}`))
			}
			g := newRig(s.url())
			require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))

			require.Len(t, s.requests(http.MethodGet), 1, "one try: the same cursor would meet the same answer")
			recs := g.history(t)
			gaps := kinds(recs, history.KindGap)
			require.Len(t, gaps, 1)
			assert.Equal(t, int64(1), gaps[0].FromEventID)
			assert.Zero(t, gaps[0].ToEventID, "open-ended: no head was named")
			unk := kinds(recs, history.KindUnknown)
			require.Len(t, unk, 1)
			assert.Contains(t, unk[0].Reason, "no head_event_id")
			assert.Empty(t, kinds(recs, history.KindOK))
		})
	}
}

func TestResumableCloseEventStops(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		sse(w)
		priming(t, w, "1", 0)
		send(t, w, mcp.Event{Type: mcp.EventClose, Data: []byte(`{"reason":"terminated"}`)})
	}
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1"), charge("c1-2")))

	assert.Len(t, s.requests(mcp.MethodToolsCall), 1, "no call after the close event")
	assert.Empty(t, s.requests(http.MethodGet), "no reconnect after the close event")
	recs := g.history(t)
	unk := kinds(recs, history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Equal(t, "c1-1", unk[0].Call)
	lost := kinds(recs, history.KindSessionLost)
	require.Len(t, lost, 1)
	assert.Equal(t, "close_event", lost[0].Reason)
	brk := kinds(recs, history.KindStreamBreak)
	require.Len(t, brk, 1)
	assert.Equal(t, "close_event", brk[0].Reason)
	stop := kinds(recs, history.KindClientStop)
	require.Len(t, stop, 1)
	assert.Contains(t, stop[0].Detail, "close event")
}

func TestResumableWithoutCursorIsUnknown(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		sse(w)
		reset(t, w)
	}
	g := newRig(s.url())
	g.opts.Protocol = mcp.Version20250326
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))

	assert.Empty(t, s.requests(http.MethodGet), "nothing to resume from")
	assert.Len(t, s.requests(mcp.MethodToolsCall), 1, "no blind retry")
	unk := kinds(g.history(t), history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Contains(t, unk[0].Reason, "no event id")
}

func TestResumableOutcomes(t *testing.T) {
	tests := []struct {
		name   string
		json   bool
		result mcp.CallResult
		rpcErr bool
		want   history.Kind
	}{
		{name: "sse ok", result: okResult(), want: history.KindOK},
		{name: "json ok", json: true, result: okResult(), want: history.KindOK},
		{name: "tool error", result: mcp.CallResult{IsError: true, Content: []mcp.Content{{Type: "text", Text: "declined"}}}, want: history.KindFail},
		{name: "rpc error", rpcErr: true, want: history.KindFail},
		{name: "interrupted", result: mcp.CallResult{IsError: true, StructuredContent: json.RawMessage(`{"error":"interrupted_by_restart"}`)}, want: history.KindUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t)
			s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
				msg, err := mcp.NewResult(m.ID, tc.result)
				assert.NoError(t, err)
				if tc.rpcErr {
					msg = mcp.NewError(m.ID, mcp.CodeInvalidParams, "bad args")
				}
				if tc.json {
					w.Header().Set("Content-Type", mcp.ContentTypeJSON)
					assert.NoError(t, json.NewEncoder(w).Encode(msg))
					return
				}
				b, err := json.Marshal(msg)
				assert.NoError(t, err)
				sse(w)
				send(t, w, mcp.Event{ID: "5", Data: b})
			}
			g := newRig(s.url())
			require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))
			out := kinds(g.history(t), tc.want)
			require.Len(t, out, 1)
			assert.Equal(t, "c1-1", out[0].OrderID)
		})
	}
}

func TestResumableReadTimeout(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, r *http.Request, _ mcp.Message, _ int) {
		sse(w)
		priming(t, w, "1", 0)
		<-r.Context().Done() // silent until the client gives up on it
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
		sse(w)
		result(t, w, "2", lastCallID(s), okResult())
	}
	g := newRig(s.url())
	g.opts.ReadTimeout = 300 * time.Millisecond // well above a loaded machine's latency
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))
	brk := kinds(g.history(t), history.KindStreamBreak)
	require.Len(t, brk, 1, "history:\n%s", g.buf.bytes())
	assert.Equal(t, "timeout", brk[0].Reason)
	require.Len(t, kinds(g.history(t), history.KindOK), 1, "history:\n%s", g.buf.bytes())
}

func TestResumableRetriesExhausted(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, _ mcp.Message, _ int) {
		sse(w)
		priming(t, w, "1", 0)
		reset(t, w)
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
		http.Error(w, "lb", http.StatusServiceUnavailable)
	}
	g := newRig(s.url())
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1")))
	assert.Len(t, s.requests(http.MethodGet), g.opts.Backoff.Retries)
	recs := g.history(t)
	for _, rc := range kinds(recs, history.KindReconnect) {
		assert.Equal(t, "status_503", rc.Result)
	}
	require.Len(t, kinds(recs, history.KindUnknown), 1)
	assert.Len(t, s.requests(mcp.MethodToolsCall), 1)
}

// blockingCall answers a tools/call with a priming event and one progress
// event, then holds the stream open until the client goes away; a GET
// resumes it with the result.
func blockingCall(t *testing.T, s *script, sent chan<- struct{}) {
	s.onCall = func(w http.ResponseWriter, r *http.Request, m mcp.Message, n int) {
		sse(w)
		priming(t, w, "1", 0)
		progress(t, w, "2", token(t, m), 1)
		if n == 1 {
			sent <- struct{}{}
			<-r.Context().Done()
			return
		}
		result(t, w, "3", m.ID, okResult())
	}
	s.onGet = func(w http.ResponseWriter, _ *http.Request, _ int) {
		sse(w)
		result(t, w, "3", lastCallID(s), okResult())
	}
}

// killMidCall runs the client until its first call has delivered its
// events, then cancels it as a SIGKILL would end it.
func killMidCall(t *testing.T, g *rig, sent <-chan struct{}, calls ...workload.Call) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Resumable(ctx, g.opts, workload.Client{ID: "c1", Calls: calls}) }()
	select {
	case <-sent:
	case <-time.After(5 * time.Second):
		t.Fatal("the call never reached the server")
	}
	require.Eventually(t, func() bool { return len(kinds(g.history(t), history.KindEvent)) == 2 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
}

func TestFileCursorSurvivesRestart(t *testing.T) {
	s := newScript(t)
	sent := make(chan struct{}, 1)
	blockingCall(t, s, sent)
	g := newRig(s.url())
	g.opts.Cursor, g.opts.CursorDir = CursorFile, t.TempDir()
	calls := []workload.Call{charge("c1-1"), charge("c1-2")}
	killMidCall(t, g, sent, calls...)

	cur, err := NewFileStore(g.opts.CursorDir, "c1").Load()
	require.NoError(t, err)
	require.NotNil(t, cur.InFlight)
	assert.Equal(t, "c1-1", cur.InFlight.Call)
	assert.Equal(t, "2", cur.InFlight.LastEventID)
	assert.Equal(t, "s1", cur.Session)
	assert.Empty(t, kinds(g.history(t), history.KindUnknown), "a call a restart will resume is not given up")

	require.NoError(t, runClient(t, TargetResumable, g, calls...))
	assert.Len(t, s.requests(mcp.MethodInitialize), 1, "the restarted client keeps the session")
	gets := s.requests(http.MethodGet)
	require.Len(t, gets, 1)
	assert.Equal(t, "2", gets[0].lastEventID)
	assert.Equal(t, "s1", gets[0].session)
	calls2 := s.requests(mcp.MethodToolsCall)
	require.Len(t, calls2, 2, "the in-flight charge is not invoked again; the second call is made")
	recs := g.history(t)
	starts := kinds(recs, history.KindClientStart)
	require.Len(t, starts, 2)
	assert.Equal(t, "fresh", starts[0].Detail)
	assert.Contains(t, starts[1].Detail, "restarted")
	okRecs := kinds(recs, history.KindOK)
	require.Len(t, okRecs, 2)
	assert.Equal(t, "c1-1", okRecs[0].Call)
	assert.Equal(t, int64(3), okRecs[0].EventID)
	assert.Len(t, kinds(recs, history.KindInvoke), 2)

	// A third run has nothing left to do.
	require.NoError(t, runClient(t, TargetResumable, g, calls...))
	assert.Len(t, s.requests(mcp.MethodToolsCall), 2)
}

func TestFileCursorWithoutEventIDIsUnknownOnRestart(t *testing.T) {
	s := newScript(t)
	s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
		sse(w)
		result(t, w, "1", m.ID, okResult())
	}
	g := newRig(s.url())
	g.opts.Cursor, g.opts.CursorDir = CursorFile, t.TempDir()
	// A cursor as a client killed between its intent and the first event
	// leaves it.
	require.NoError(t, NewFileStore(g.opts.CursorDir, "c1").Save(Cursor{
		Client: "c1", Session: "s9", Protocol: mcp.LatestVersion, NextRequestID: 3,
		InFlight: &InFlight{Call: "c1-1", RequestID: "2", Attempt: 1},
	}))
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1"), charge("c1-2")))
	calls := s.requests(mcp.MethodToolsCall)
	require.Len(t, calls, 1)
	assert.Equal(t, "s9", calls[0].session, "the saved session is adopted")
	assert.Equal(t, "3", calls[0].msg.IDString(), "request ids continue where the cursor left them")
	unk := kinds(g.history(t), history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Equal(t, "c1-1", unk[0].Call)
}

func TestMemoryCursorStartsOver(t *testing.T) {
	s := newScript(t)
	sent := make(chan struct{}, 1)
	blockingCall(t, s, sent)
	g := newRig(s.url())
	calls := []workload.Call{charge("c1-1")}
	killMidCall(t, g, sent, calls...)

	require.NoError(t, runClient(t, TargetResumable, g, calls...))
	assert.Empty(t, s.requests(http.MethodGet), "a memory cursor has nothing to resume from")
	assert.Len(t, s.requests(mcp.MethodInitialize), 2)
	callsSeen := s.requests(mcp.MethodToolsCall)
	require.Len(t, callsSeen, 2, "the restarted client invokes the charge again")
	assert.Equal(t, "s2", callsSeen[1].session)
	recs := kinds(g.history(t), history.KindClientStart)
	require.Len(t, recs, 2)
	assert.Equal(t, "fresh", recs[1].Detail)
}

func TestFileStore(t *testing.T) {
	dir := t.TempDir()
	st := NewFileStore(dir, "client/../a b")
	assert.Equal(t, filepath.Join(dir, "client_.._a_b.json"), st.Path())
	c, err := st.Load()
	require.NoError(t, err)
	assert.Equal(t, Cursor{Client: "client/../a b"}, c)

	c.Session, c.Done = "s1", []Completed{{Call: "x", Outcome: history.KindOK}}
	c.InFlight = &InFlight{Call: "y", RequestID: "4", LastEventID: "9", Attempt: 2}
	require.NoError(t, st.Save(c))
	back, err := st.Load()
	require.NoError(t, err)
	assert.Equal(t, c, back)
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")

	_, err = NewFileStore(dir, "client_.._a_b").Load()
	require.Error(t, err, "a cursor of another client is refused")
	require.NoError(t, os.WriteFile(st.Path(), []byte("{"), 0o644))
	_, err = st.Load()
	require.Error(t, err)
}

func TestMemoryStoreCopies(t *testing.T) {
	m := NewMemoryStore("c")
	c := Cursor{Client: "c", InFlight: &InFlight{Call: "a"}}
	require.NoError(t, m.Save(c))
	c.InFlight.Call = "b"
	back, err := m.Load()
	require.NoError(t, err)
	assert.Equal(t, "a", back.InFlight.Call)
}

func TestBackoff(t *testing.T) {
	opts := workload.Options{Endpoint: "http://127.0.0.1:1/mcp", History: history.NewWriter(&syncBuffer{}, runclock.Start()), Seed: 3,
		Backoff: workload.Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond, Retries: 9}}
	a, err := newAgent(TargetResumable, opts, workload.Client{ID: "c1"})
	require.NoError(t, err)
	b, err := newAgent(TargetResumable, opts, workload.Client{ID: "c1"})
	require.NoError(t, err)
	for n := 1; n <= 9; n++ {
		d := a.backoff(n, 0)
		assert.Equal(t, d, b.backoff(n, 0), "same seed and client, same delays")
		top := min(10*time.Millisecond<<(n-1), 80*time.Millisecond)
		assert.GreaterOrEqual(t, d, top/2, "attempt %d", n)
		assert.LessOrEqual(t, d, top, "attempt %d", n)
	}
	assert.Equal(t, time.Second, a.backoff(1, time.Second), "the server's retry is a floor")
}

// A call for which no session could be opened was never invoked: both
// clients record it failed and go on to the next call, and the run ends
// well; nothing of it can have run, so it is no unknown outcome.
func TestACallThatNeverGotASessionFailsAndTheNextGoesOn(t *testing.T) {
	for _, target := range []string{TargetNaive, TargetResumable} {
		t.Run(target, func(t *testing.T) {
			s := newScript(t)
			g := newRig(s.url())
			s.failInit = g.opts.Backoff.Retries + 1 // every attempt of the first call
			s.onCall = func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
				sse(w)
				result(t, w, "1", m.ID, okResult())
			}
			require.NoError(t, runClient(t, target, g, charge("c1-1"), charge("c1-2")))
			assert.Len(t, s.requests(mcp.MethodToolsCall), 1, "only the second call was invoked")
			recs := g.history(t)
			fails := kinds(recs, history.KindFail)
			require.Len(t, fails, 1)
			assert.Equal(t, "c1-1", fails[0].Call)
			assert.Contains(t, fails[0].Reason, "500")
			assert.Empty(t, kinds(recs, history.KindUnknown))
			oks := kinds(recs, history.KindOK)
			require.Len(t, oks, 1)
			assert.Equal(t, "c1-2", oks[0].Call)
		})
	}
}

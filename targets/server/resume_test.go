package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/server/store"
)

// received sorts a stream's events into progress sequence numbers and
// responses.
type received struct {
	ids       []int64
	seqs      []int64
	responses []mcpwire.Message
}

func sortEvents(t *testing.T, evs []mcpwire.Event) received {
	t.Helper()
	var r received
	for _, ev := range evs {
		r.ids = append(r.ids, eventID(t, ev))
		if len(ev.Data) == 0 {
			continue
		}
		m := decode(t, ev.Data)
		switch {
		case m.IsResponse():
			r.responses = append(r.responses, m)
		case m.Method == mcpwire.MethodProgress:
			var p mcpwire.ProgressParams
			require.NoError(t, json.Unmarshal(m.Params, &p))
			r.seqs = append(r.seqs, int64(p.Progress))
		}
	}
	return r
}

// primed checks that a resumed stream starts with a priming event repeating
// its cursor, and returns the events after it.
func primed(t *testing.T, evs []mcpwire.Event, cursor int64) []mcpwire.Event {
	t.Helper()
	require.NotEmpty(t, evs, "a resumed stream starts with a priming event")
	assert.Equal(t, strconv.FormatInt(cursor, 10), evs[0].ID, "the priming event repeats the cursor")
	assert.Empty(t, evs[0].Data)
	return evs[1:]
}

func TestResumeAfterCutMidCharge(t *testing.T) {
	tests := []struct {
		name        string
		afterResult bool // resume once the result is in the log, or while the charge runs
	}{
		{"resume while the charge runs", false},
		{"resume after the result was written", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, Config{})
			sid, v := ts.initialize(t, mcpwire.Version20251125)
			s := ts.call(t, sid, v, 2, mcpwire.ToolCharge, map[string]any{"order_id": "o-1", "amount_cents": 4999, "duration_ms": 300})
			prime := s.next(t)
			require.Empty(t, prime.Data, "the priming event gives the client a cursor")
			s.cut()
			if tc.afterResult {
				ts.waitRecord(t, sideeffects.KindResultWritten, forRequest("2"))
			} else {
				require.Empty(t, ts.records(sideeffects.KindCharge, nil), "the charge is still running")
			}

			resp := ts.resume(t, sid, v, eventID(t, prime))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			got := sortEvents(t, primed(t, readAll(t, resp), eventID(t, prime)))
			require.Len(t, got.responses, 1, "the original result arrives exactly once")
			_, sc := toolResult(t, got.responses[0])
			assert.Equal(t, "o-1", sc["order_id"])

			written := ts.records(sideeffects.KindResultWritten, forRequest("2"))
			require.Len(t, written, 1)
			assert.Equal(t, []int64{written[0].EventID}, got.ids, "only the result follows the priming event")
			assert.Len(t, ts.records(sideeffects.KindCharge, nil), 1, "exactly one charge")
			assert.Empty(t, ts.records(sideeffects.KindResultDropped, nil))

			again := ts.resume(t, sid, v, written[0].EventID)
			require.Equal(t, http.StatusOK, again.StatusCode)
			assert.Empty(t, primed(t, readAll(t, again), written[0].EventID), "nothing follows the result: the stream is complete")
		})
	}
}

func TestResumeChattyEveryVersion(t *testing.T) {
	ts := startServer(t, Config{})
	for _, version := range mcpwire.Versions {
		t.Run(version, func(t *testing.T) {
			sid, v := ts.initialize(t, version)
			s := ts.call(t, sid, v, 2, mcpwire.ToolChatty, map[string]any{"events": 8, "interval_ms": 5})
			ev := s.next(t)
			if len(ev.Data) == 0 {
				ev = s.next(t) // skip the priming event
			}
			first := sortEvents(t, []mcpwire.Event{ev})
			require.Equal(t, []int64{1}, first.seqs)
			s.cut()

			resp := ts.resume(t, sid, v, eventID(t, ev))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			got := sortEvents(t, readAll(t, resp))
			assert.Equal(t, []int64{2, 3, 4, 5, 6, 7, 8}, got.seqs, "the rest of the stream, nothing twice")
			require.Len(t, got.responses, 1)
		})
	}
}

func TestResumeReplaysOnlyItsStream(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcpwire.Version20251125)
	a := ts.call(t, sid, v, 2, mcpwire.ToolChatty, map[string]any{"events": 10, "interval_ms": 2})
	b := ts.call(t, sid, v, 3, mcpwire.ToolChatty, map[string]any{"events": 10, "interval_ms": 2})
	prime := a.next(t)
	a.cut()
	bGot := sortEvents(t, b.rest(t))
	require.Len(t, bGot.seqs, 10)
	ts.waitRecord(t, sideeffects.KindResultWritten, forRequest("2"))

	resp := ts.resume(t, sid, v, eventID(t, prime))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	evs := primed(t, readAll(t, resp), eventID(t, prime))
	var want []int64
	for _, r := range ts.ledger.Records() {
		if r.RequestID == "2" && (r.Kind == sideeffects.KindEventEmitted || r.Kind == sideeffects.KindResultWritten) {
			want = append(want, r.EventID)
		}
	}
	got := sortEvents(t, evs)
	assert.Equal(t, want, got.ids, "exactly the events of request 2's stream")
	for _, ev := range evs[:len(evs)-1] {
		assert.Contains(t, string(ev.Data), `"progressToken":"tok-2"`)
	}
	assert.NotContains(t, got.ids, bGot.ids[1], "no event of the other stream")
}

func TestEvictedResumeGone(t *testing.T) {
	tests := []struct {
		name     string
		args     map[string]any
		complete bool
	}{
		{"stream complete", map[string]any{"events": 20, "interval_ms": 2}, true},
		{"stream still live", map[string]any{"events": 300, "interval_ms": 5}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServer(t, Config{RetentionEvents: 5, OnUnresumable: OnUnresumableGone})
			sid, v := ts.initialize(t, mcpwire.Version20251125)
			s := ts.call(t, sid, v, 2, mcpwire.ToolChatty, tc.args)
			s.next(t) // priming
			last := eventID(t, s.next(t))
			s.cut()
			if tc.complete {
				ts.waitRecord(t, sideeffects.KindCallFinished, forRequest("2"))
			} else {
				ts.waitRecord(t, sideeffects.KindEventEmitted, func(r sideeffects.Record) bool { return r.Seq >= 12 })
			}

			resp := ts.resume(t, sid, v, last)
			require.Equal(t, http.StatusGone, resp.StatusCode)
			assert.Equal(t, mcpwire.ContentTypeJSON, resp.Header.Get("Content-Type"))
			body, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			var gone resumeGone
			require.NoError(t, json.Unmarshal(body, &gone))
			assert.Equal(t, fmt.Sprintf(`{"error":"resume_window_exceeded","last_event_id":%d,"oldest_retained_id":%d,"head_event_id":%d,"resume_event_id":%d}`,
				last, gone.OldestRetainedID, gone.HeadEventID, gone.ResumeEventID), string(body))
			assert.Less(t, gone.ResumeEventID, gone.OldestRetainedID, "the newest evicted event precedes the retained ones")
			assert.Greater(t, gone.ResumeEventID, last)
			assert.Equal(t, gone.HeadEventID-4, gone.OldestRetainedID, "five events retained, all of this stream")
			assert.Greater(t, gone.HeadEventID, last+5)
			if tc.complete {
				written := ts.records(sideeffects.KindResultWritten, forRequest("2"))
				require.Len(t, written, 1)
				assert.Equal(t, written[0].EventID, gone.HeadEventID, "head is the stream's newest event")
				// Resuming at resume_event_id still delivers the result.
				again := ts.resume(t, sid, v, gone.ResumeEventID)
				require.Equal(t, http.StatusOK, again.StatusCode)
				b, err := io.ReadAll(again.Body)
				require.NoError(t, err)
				assert.Contains(t, string(b), fmt.Sprintf("id: %d\n", written[0].EventID), "the result is replayed")
			}

			atHead := ts.resume(t, sid, v, gone.HeadEventID)
			require.Equal(t, http.StatusOK, atHead.StatusCode, "resuming at head is honourable")
			got := sortEvents(t, primed(t, readAll(t, atHead), gone.HeadEventID))
			for i, id := range got.ids {
				assert.Equal(t, gone.HeadEventID+int64(i)+1, id, "from head on, nothing is lost")
			}
			if !tc.complete {
				require.Len(t, got.responses, 1)
			}
		})
	}
}

func TestEvictedResumeSilentHead(t *testing.T) {
	ts := startServer(t, Config{RetentionEvents: 5, OnUnresumable: OnUnresumableSilentHead})
	sid, v := ts.initialize(t, mcpwire.Version20251125)
	// 1.5 s of events, so the stream is still live when the resume comes
	// however loaded the machine (at 60 × 3 ms it had once ended).
	s := ts.call(t, sid, v, 2, mcpwire.ToolChatty, map[string]any{"events": 300, "interval_ms": 5})
	s.next(t) // priming
	first := s.next(t)
	s.cut()
	ts.waitRecord(t, sideeffects.KindEventEmitted, func(r sideeffects.Record) bool { return r.Seq >= 12 })
	emittedBefore := len(ts.records(sideeffects.KindEventEmitted, nil))

	resp := ts.resume(t, sid, v, eventID(t, first))
	require.Equal(t, http.StatusOK, resp.StatusCode, "silent_head answers as if all were well: the incident's bug")
	got := sortEvents(t, readAll(t, resp))
	require.Len(t, got.responses, 1)
	require.NotEmpty(t, got.seqs)
	assert.Greater(t, got.seqs[0], int64(emittedBefore), "no replay: it continues at head")

	var skipped []int64
	for seq := int64(2); seq < got.seqs[0]; seq++ {
		skipped = append(skipped, seq)
	}
	t.Logf("silent_head skipped progress events %v without telling the client", skipped)
	assert.GreaterOrEqual(t, len(skipped), 10)
	for i := 1; i < len(got.seqs); i++ {
		assert.Equal(t, got.seqs[i-1]+1, got.seqs[i], "continuous after the silent jump")
	}
}

// TestResumeTakesOverAttachedStream holds the answer to a half-open
// connection: the server still writes to a connection the client has given
// up on, and the client's resume takes the stream over instead of meeting
// 409 (which the resumable client reads as events lost).
func TestResumeTakesOverAttachedStream(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcpwire.Version20251125)
	s := ts.call(t, sid, v, 2, mcpwire.ToolChatty, map[string]any{"events": 50, "interval_ms": 5})
	prime := s.next(t)

	resp := ts.resume(t, sid, v, eventID(t, prime))
	require.Equal(t, http.StatusOK, resp.StatusCode, "the resume takes the stream from the POST connection")
	old := readAll(t, s.resp)
	for _, ev := range old {
		assert.NotContains(t, string(ev.Data), `"result"`, "the displaced connection ends without the result")
	}
	got := sortEvents(t, primed(t, readAll(t, resp), eventID(t, prime)))
	require.Len(t, got.responses, 1, "the new connection gets the rest of the stream")
	assert.Len(t, got.seqs, 50, "everything after its cursor, what the old connection was sent included")

	g := get(sid, v)
	first := ts.open(t, g.method, g.h, "")
	first.next(t)
	second := ts.open(t, g.method, g.h, "")
	assert.NotEmpty(t, second.next(t).ID, "the standalone stream is taken over too")
	assert.Empty(t, first.rest(t), "the displaced standalone connection ends")
}

func TestCancelNotificationCancels(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcpwire.Version20251125)
	s := ts.call(t, sid, v, 2, mcpwire.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 5000})
	s.next(t)
	resp := ts.do(t, context.Background(), http.MethodPost, "", headers(sid, v),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`)
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	assert.Empty(t, s.rest(t), "a cancelled request gets no response; its stream ends")
	finished := ts.waitRecord(t, sideeffects.KindCallFinished, forRequest("2"))
	assert.Equal(t, "cancelled", finished.Reason)
	assert.Empty(t, ts.records(sideeffects.KindCharge, nil))
}

// TestLiveConnectionBehindRetention drives pump directly: events evicted
// before a live connection wrote them.
func TestLiveConnectionBehindRetention(t *testing.T) {
	for _, policy := range []string{OnUnresumableGone, OnUnresumableSilentHead} {
		t.Run(policy, func(t *testing.T) {
			ts := startServer(t, Config{RetentionEvents: 3, OnUnresumable: policy, Keepalive: time.Millisecond})
			sid, _ := ts.initialize(t, mcpwire.Version20250618)
			sess, _ := ts.lookup(sid)
			st, err := sess.log.OpenStream(store.KindSSE, []store.Request{{ID: json.RawMessage(`9`), Method: mcpwire.MethodToolsCall}})
			require.NoError(t, err)
			for range 6 {
				_, err := sess.log.Append(st, json.RawMessage(`{"jsonrpc":"2.0","method":"x"}`), "", nil)
				require.NoError(t, err)
			}
			w := newSyncWriter()
			done := make(chan struct{})
			go func() {
				defer close(done)
				ts.pump(w, httptest.NewRequest(http.MethodGet, "/mcp", nil), sess, st, nil, 1)
			}()
			if policy == OnUnresumableGone {
				select {
				case <-done:
				case <-time.After(testTimeout):
					t.Fatal("gone: the connection was not ended")
				}
				assert.Empty(t, w.String(), "gone: nothing written, the resume will meet 410")
				return
			}
			<-w.wrote // a keepalive: the pump is past the gap, waiting at head
			last, err := sess.log.Append(st, json.RawMessage(`{"jsonrpc":"2.0","id":9,"result":{}}`), "9", nil)
			require.NoError(t, err)
			<-done
			events := strings.ReplaceAll(w.String(), ": keepalive\n\n", "")
			assert.Equal(t, fmt.Sprintf("id: %d\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}\n\n", last), events,
				"silent_head: retained events skipped, only what came after")
		})
	}
}

// syncWriter is a ResponseWriter safe to read while a pump writes to it.
// It keeps the status and what had been written at each flush, to show what
// a connection cut after that flush leaves a client with.
type syncWriter struct {
	mu      sync.Mutex
	h       http.Header
	status  int
	buf     bytes.Buffer
	flushes []string
	wrote   chan struct{} // signalled on a write
	flushed chan struct{} // signalled on a flush
}

func newSyncWriter() *syncWriter {
	return &syncWriter{h: http.Header{}, wrote: make(chan struct{}, 1), flushed: make(chan struct{}, 1)}
}

func (w *syncWriter) Header() http.Header { return w.h }

func (w *syncWriter) WriteHeader(code int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.status = code
}

func (w *syncWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushes = append(w.flushes, w.buf.String())
	signal(w.flushed)
}

func (w *syncWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	signal(w.wrote)
	return w.buf.Write(b)
}

// signal notifies c without blocking; one pending notice is enough.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// firstFlush is what the body held at the first flush.
func (w *syncWriter) firstFlush() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushes[0]
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

func TestEvictedByAge(t *testing.T) {
	ts := startServer(t, Config{RetentionAge: 30 * time.Millisecond})
	sid, v := ts.initialize(t, mcpwire.Version20251125)
	s := ts.call(t, sid, v, 2, mcpwire.ToolChatty, map[string]any{"events": 3})
	prime := s.next(t)
	s.cut()
	written := ts.waitRecord(t, sideeffects.KindResultWritten, forRequest("2"))
	time.Sleep(60 * time.Millisecond) // let every event of the stream age out: the behaviour under test is time itself

	resp := ts.resume(t, sid, v, eventID(t, prime))
	require.Equal(t, http.StatusGone, resp.StatusCode)
	var gone resumeGone
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&gone))
	assert.Equal(t, resumeGone{Error: errResumeWindow, LastEventID: eventID(t, prime), OldestRetainedID: 0, HeadEventID: written.EventID, ResumeEventID: written.EventID}, gone,
		"everything aged out: the earliest honourable cursor is the head")
}

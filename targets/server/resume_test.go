package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// received sorts a stream's events into progress sequence numbers and
// responses.
type received struct {
	ids       []int64
	seqs      []int64
	responses []mcp.Message
}

func sortEvents(t *testing.T, evs []mcp.Event) received {
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
		case m.Method == mcp.MethodProgress:
			var p mcp.ProgressParams
			require.NoError(t, json.Unmarshal(m.Params, &p))
			r.seqs = append(r.seqs, int64(p.Progress))
		}
	}
	return r
}

// primed checks that a resumed stream starts with a priming event repeating
// its cursor, and returns the events after it.
func primed(t *testing.T, evs []mcp.Event, cursor int64) []mcp.Event {
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
			sid, v := ts.initialize(t, mcp.Version20251125)
			s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o-1", "amount_cents": 4999, "duration_ms": 300})
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
	for _, version := range mcp.Versions {
		t.Run(version, func(t *testing.T) {
			sid, v := ts.initialize(t, version)
			s := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 8, "interval_ms": 5})
			ev := s.next(t)
			if len(ev.Data) == 0 {
				ev = s.next(t) // skip the priming event
			}
			first := sortEvents(t, []mcp.Event{ev})
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
	sid, v := ts.initialize(t, mcp.Version20251125)
	a := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 10, "interval_ms": 2})
	b := ts.call(t, sid, v, 3, mcp.ToolChatty, map[string]any{"events": 10, "interval_ms": 2})
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

// firstEvent waits for the ledger's record of the first progress event of
// request 2 and returns its id: a cursor that does not depend on the
// request's own connection keeping up with a live stream (with five events
// retained, a connection more than 10 or 25 ms behind, as on a loaded
// machine, is ended or moved to head by the server).
func firstEvent(t *testing.T, ts *tserver) int64 {
	t.Helper()
	return ts.waitRecord(t, sideeffects.KindEventEmitted, func(r sideeffects.Record) bool { return r.RequestID == "2" && r.Seq == 1 }).EventID
}

// emittedPast waits until the server has emitted event id: with five
// events retained, every event of a single stream up to id-5 is evicted.
func emittedPast(t *testing.T, ts *tserver, id int64) {
	t.Helper()
	ts.waitRecord(t, sideeffects.KindEventEmitted, func(r sideeffects.Record) bool { return r.EventID >= id })
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
			gaps := &gapLog{}
			ts := startServer(t, Config{RetentionEvents: 5, OnUnresumable: OnUnresumableGone, Logger: slog.New(gaps)})
			sid, v := ts.initialize(t, mcp.Version20251125)
			s := ts.call(t, sid, v, 2, mcp.ToolChatty, tc.args)
			last := firstEvent(t, ts)
			s.cut()
			if tc.complete {
				ts.waitRecord(t, sideeffects.KindCallFinished, forRequest("2"))
			} else {
				emittedPast(t, ts, last+12)
			}

			resp := ts.resume(t, sid, v, last)
			require.Equal(t, http.StatusGone, resp.StatusCode)
			assert.Equal(t, mcp.ContentTypeJSON, resp.Header.Get("Content-Type"))
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
			if tc.complete || len(got.responses) == 1 {
				return
			}
			// A reader more than five events (25 ms) behind the live
			// stream is ended, so that its next resume meets 410: the loss
			// is surfaced, never silent.
			lastGot := gone.HeadEventID
			if n := len(got.ids); n > 0 {
				lastGot = got.ids[n-1]
			}
			require.True(t, gaps.ended(lastGot), "the stream ended at %d without its result, and not because its reader fell behind retention; server gaps: %+v",
				lastGot, gaps.all())
			assert.Equal(t, http.StatusGone, ts.resume(t, sid, v, lastGot).StatusCode, "the next resume surfaces the loss")
		})
	}
}

func TestEvictedResumeSilentHead(t *testing.T) {
	gaps := &gapLog{}
	ts := startServer(t, Config{RetentionEvents: 5, OnUnresumable: OnUnresumableSilentHead, Logger: slog.New(gaps)})
	sid, v := ts.initialize(t, mcp.Version20251125)
	// 1.5 s of events, so the stream is still live when the resume comes
	// however loaded the machine (at 60 × 3 ms it had once ended).
	s := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 300, "interval_ms": 5})
	first := firstEvent(t, ts)
	s.cut()
	emittedPast(t, ts, first+12)

	resp := ts.resume(t, sid, v, first)
	require.Equal(t, http.StatusOK, resp.StatusCode, "silent_head answers as if all were well: the incident's bug")
	evs := readAll(t, resp)
	require.NotEmpty(t, evs)
	head := eventID(t, evs[0])
	assert.True(t, gaps.skipped(first, head), "the resume from %d continues at the head %d, its priming event's cursor; server gaps: %+v",
		first, head, gaps.all())
	assert.GreaterOrEqual(t, head, first+12, "no replay: it continues at head, twelve events on at least")
	got := sortEvents(t, primed(t, evs, head))
	if len(got.seqs) > 0 {
		var skipped []int64
		for seq := int64(2); seq < got.seqs[0]; seq++ {
			skipped = append(skipped, seq)
		}
		t.Logf("silent_head skipped progress events %v without telling the client", skipped)
	}

	// After the jump the stream is continuous, but for the jumps the
	// server made when this reader fell more than five events (25 ms)
	// behind the live stream, as on a loaded machine: each starts at the
	// last event delivered and ends at a head the next event follows (or
	// at the result itself, which is then lost too).
	prev := head
	for _, id := range got.ids {
		if id != prev+1 {
			assert.True(t, gaps.skippedPast(prev, id), "events %d to %d missing, and the server made no jump from %d; server gaps: %+v",
				prev+1, id-1, prev, gaps.all())
		}
		prev = id
	}
	if len(got.responses) == 1 {
		return
	}
	written := ts.waitRecord(t, sideeffects.KindResultWritten, forRequest("2"))
	assert.True(t, gaps.skipped(prev, written.EventID), "the stream ended at %d without its result %d, and the server made no jump to it; server gaps: %+v",
		prev, written.EventID, gaps.all())
}

// gap is a jump the server logged: events after cursor evicted under a
// resume or a live connection, which continued at head (silent_head) or
// was ended (gone, head 0).
type gap struct {
	cursor, head int64
	ended        bool
}

// gapLog is a slog handler that keeps the server's log records of
// evicted events under a connection (Server.skipGap and resumePoint), so a
// test tells the server's own jumps from events lost in other ways.
type gapLog struct {
	mu   sync.Mutex
	gaps []gap
}

func (*gapLog) Enabled(context.Context, slog.Level) bool { return true }
func (g *gapLog) WithAttrs([]slog.Attr) slog.Handler     { return g }
func (g *gapLog) WithGroup(string) slog.Handler          { return g }

func (g *gapLog) Handle(_ context.Context, r slog.Record) error {
	var x gap
	switch {
	case strings.HasPrefix(r.Message, "silent_head: skipping evicted events"):
	case strings.HasPrefix(r.Message, "events evicted under a live connection"):
		x.ended = true
	default:
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "cursor":
			x.cursor = a.Value.Int64()
		case "head":
			x.head = a.Value.Int64()
		}
		return true
	})
	g.mu.Lock()
	defer g.mu.Unlock()
	g.gaps = append(g.gaps, x)
	return nil
}

func (g *gapLog) all() []gap {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.gaps)
}

// skipped reports whether the server jumped from cursor to head.
func (g *gapLog) skipped(cursor, head int64) bool {
	return slices.Contains(g.all(), gap{cursor: cursor, head: head})
}

// skippedPast reports whether the server jumped from cursor to a head
// that next follows.
func (g *gapLog) skippedPast(cursor, next int64) bool {
	return slices.ContainsFunc(g.all(), func(x gap) bool { return !x.ended && x.cursor == cursor && x.head < next })
}

// ended reports whether the server ended a live connection whose cursor
// was last.
func (g *gapLog) ended(last int64) bool {
	return slices.ContainsFunc(g.all(), func(x gap) bool { return x.ended && x.cursor == last })
}

// TestResumeTakesOverAttachedStream holds the answer to a half-open
// connection: the server still writes to a connection the client has given
// up on, and the client's resume takes the stream over instead of meeting
// 409 (which the resumable client reads as events lost).
func TestResumeTakesOverAttachedStream(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 50, "interval_ms": 5})
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
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 5000})
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
			sid, _ := ts.initialize(t, mcp.Version20250618)
			sess, _ := ts.lookup(sid)
			st, err := sess.log.OpenStream(store.KindSSE, []store.Request{{ID: json.RawMessage(`9`), Method: mcp.MethodToolsCall}})
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
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 3})
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

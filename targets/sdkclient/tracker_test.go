package sdkclient

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) records(t *testing.T) []history.Record {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	recs, err := history.Read(bytes.NewReader(l.b.Bytes()))
	require.NoError(t, err)
	return recs
}

func newTracker(t *testing.T) (*Tracker, *lockedBuffer) {
	t.Helper()
	var buf lockedBuffer
	clock := runclock.Start()
	tr, err := NewTracker(workload.Options{History: history.NewWriter(&buf, clock)}, "alice", "test")
	require.NoError(t, err)
	return tr, &buf
}

func kindsOf(recs []history.Record) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		out = append(out, r.Kind)
	}
	return out
}

var chargeCall = workload.Call{ID: "c1", Tool: mcp.ToolCharge, Args: map[string]any{"order_id": "o-1"}}

// TestCallOutcome resolves outcomes from the states the transport can
// leave a call in.
func TestCallOutcome(t *testing.T) {
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		prepare func(c *Call)
		isError bool
		err     error
		kind    history.Kind
		reason  string
	}{
		{"ok", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(200, nil); answer(c, false) }, false, nil, history.KindOK, ""},
		{"tool error", func(c *Call) { c.sending("2"); c.markWrote(); answer(c, false) }, true, nil, history.KindFail, "tool_error"},
		{"error response", func(c *Call) { c.sending("2"); c.markWrote(); answer(c, true) }, false, errBoom, history.KindFail, "error_response"},
		{"client rejects a result", func(c *Call) { c.sending("2"); c.markWrote(); answer(c, false) }, false, errBoom, history.KindFail, "client_error"},
		{"never sent", func(*Call) {}, false, errBoom, history.KindFail, "not_sent"},
		{"dial failed", func(c *Call) { c.sending("2"); c.posted(0, errBoom) }, false, errBoom, history.KindFail, "not_sent"},
		{"503 from a balancer", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(503, nil) }, false, errBoom, history.KindFail, "status_503"},
		{"reset after sending", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(0, io.ErrUnexpectedEOF) }, false, errBoom, history.KindUnknown, "eof"},
		{"stream broke", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(200, nil); c.broke("reset", errBoom) }, false, errBoom, history.KindUnknown, "reset"},
		{"resume refused", func(c *Call) {
			c.sending("2")
			c.markWrote()
			c.posted(200, nil)
			c.broke("eof", io.EOF)
			c.reconnected(1, 3, time.Second, 404, nil)
		}, false, errBoom, history.KindUnknown, "status_404"},
		{"cancelled", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(200, nil) }, false, context.Canceled, history.KindUnknown, "cancelled"},
		{"no failure seen", func(c *Call) { c.sending("2"); c.markWrote(); c.posted(200, nil) }, false, errBoom, history.KindUnknown, "error"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr, buf := newTracker(t)
			_, c := tr.Begin(context.Background(), chargeCall, "s1")
			tc.prepare(c)
			c.End(tc.isError, tc.err)
			recs := buf.records(t)
			out := recs[len(recs)-1]
			assert.Equal(t, tc.kind, out.Kind)
			assert.Equal(t, tc.reason, out.Reason)
			assert.Equal(t, "o-1", out.OrderID)
			assert.Equal(t, "s1", out.Session)
			inv := recs[0]
			assert.Equal(t, history.KindInvoke, inv.Kind)
			assert.Equal(t, 1, inv.Attempt)
			assert.Equal(t, mcp.ToolCharge, inv.Tool)
			require.NoError(t, tr.Err())
		})
	}
}

func answer(c *Call, isError bool) {
	m := mcp.Message{JSONRPC: "2.0", ID: []byte("2"), Result: []byte("{}")}
	if isError {
		m = mcp.NewError([]byte("2"), mcp.CodeInvalidParams, "no")
	}
	c.saw(m, 9)
}

func TestProgressCarriesTheWireEventID(t *testing.T) {
	tr, buf := newTracker(t)
	_, c := tr.Begin(context.Background(), chargeCall, "s1")
	c.sending("2")
	tr.noteWire(mcp.ProgressParams{ProgressToken: c.Token(), Progress: 1}, 41)
	tr.Progress(c.Token(), 1)
	tr.Progress(c.Token(), 2)
	tr.Progress("someone-else", 1)
	recs := buf.records(t)
	require.Equal(t, []history.Kind{history.KindInvoke, history.KindEvent, history.KindEvent}, kindsOf(recs))
	assert.EqualValues(t, 41, recs[1].EventID)
	assert.EqualValues(t, 1, recs[1].Seq)
	assert.Zero(t, recs[2].EventID, "not seen on the wire")
	assert.Equal(t, "2", recs[2].RequestID)
}

func TestBeginGivesEveryCallItsOwnToken(t *testing.T) {
	tr, _ := newTracker(t)
	_, a := tr.Begin(context.Background(), chargeCall, "s")
	_, b := tr.Begin(context.Background(), chargeCall, "s")
	assert.NotEqual(t, a.Token(), b.Token())
}

func TestNewTrackerNeedsHistory(t *testing.T) {
	_, err := NewTracker(workload.Options{}, "a", "t")
	assert.ErrorIs(t, err, ErrNoHistory)
}

// script answers a tools/call with an event stream and resumes with one
// too; a stream can be cut short by hijacking the connection.
type script struct {
	post   string // the event stream answering the POST
	cut    bool   // close the POST's connection after writing it
	resume string // the event stream answering GET with Last-Event-ID
}

func (s script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", mcp.ContentTypeSSE)
	if r.Method == http.MethodGet {
		fmt.Fprint(w, s.resume)
		return
	}
	if !s.cut {
		fmt.Fprint(w, s.post)
		return
	}
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	fmt.Fprintf(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n",
		len(s.post), s.post)
	_ = rw.Flush()
	_ = conn.Close()
}

const (
	primeEvent    = "event: prime\nid: S_0\ndata: \n\n"
	progressEvent = "event: message\nid: S_1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"c1\",\"progress\":1}}\n\n"
	resultEvent   = "event: message\nid: S_2\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n"
	callBody      = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","_meta":{"progressToken":"c1"}}}`
)

// drive plays the part of an SDK: it posts the call through the tracker's
// transport, reads the stream (handing progress over as an SDK would),
// resumes once if the stream breaks, and ends the call.
func drive(t *testing.T, tr *Tracker, url string) {
	t.Helper()
	hc := &http.Client{Transport: tr.Transport(http.DefaultTransport)}
	ctx, c := tr.Begin(context.Background(), chargeCall, "s1")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(callBody))
	require.NoError(t, err)
	resp, err := hc.Do(req)
	require.NoError(t, err)
	readAll(tr, resp)
	if !c.Answered() {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		req.Header.Set(mcp.HeaderLastEventID, "S_1")
		resp, err = hc.Do(req)
		require.NoError(t, err)
		readAll(tr, resp)
	}
	c.End(false, nil)
}

func readAll(tr *Tracker, resp *http.Response) {
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "notifications/progress") {
			tr.Progress("c1", 1)
		}
	}
}

func TestObserverRecordsWhatTheSDKDoes(t *testing.T) {
	tests := []struct {
		name   string
		script script
		kinds  []history.Kind
	}{
		{"answered on the POST", script{post: primeEvent + progressEvent + resultEvent},
			[]history.Kind{history.KindInvoke, history.KindEvent, history.KindOK}},
		{"cut and resumed", script{post: primeEvent + progressEvent, cut: true, resume: resultEvent},
			[]history.Kind{history.KindInvoke, history.KindEvent, history.KindStreamBreak, history.KindReconnect,
				history.KindResume, history.KindOK}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hs := httptest.NewServer(tc.script)
			t.Cleanup(hs.Close)
			tr, buf := newTracker(t)
			drive(t, tr, hs.URL)
			recs := buf.records(t)
			require.Equal(t, tc.kinds, kindsOf(recs))
			assert.Equal(t, "2", recs[0].RequestID, "the request id comes from the POST body")
			assert.EqualValues(t, 1, recs[1].EventID, "the progress event id comes from the wire")
			assert.EqualValues(t, 2, recs[len(recs)-1].EventID, "the result's event id")
			for _, r := range recs {
				assert.Equal(t, "alice", r.Client)
				assert.Equal(t, "c1", r.Call)
			}
			if tc.script.cut {
				assert.Equal(t, "eof", recs[2].Reason)
				assert.EqualValues(t, 1, recs[3].LastEventID)
				assert.Equal(t, "ok", recs[3].Result)
			}
		})
	}
}

func BenchmarkTappedBody(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(primeEvent)
	for i := 1; i <= 1000; i++ {
		fmt.Fprintf(&sb, "event: message\nid: S_%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","+
			"\"params\":{\"progressToken\":\"c1\",\"progress\":%d}}\n\n", i, i)
	}
	stream := sb.String()
	tr, err := NewTracker(workload.Options{History: history.NewWriter(io.Discard, runclock.Start())}, "a", "t")
	require.NoError(b, err)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		resp := &http.Response{Header: http.Header{"Content-Type": {mcp.ContentTypeSSE}},
			Body: io.NopCloser(strings.NewReader(stream))}
		tr.tap(context.Background(), nil, resp)
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			b.Fatal(err)
		}
	}
}

package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
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

// seen is one request the scripted server received.
type seen struct {
	method      string
	rpc         string // JSON-RPC method of a POST
	session     string
	protocol    string
	accept      string
	lastEventID string
	hasLastID   bool
	msg         mcp.Message
	at          time.Time
	remote      string // the client's address: one per connection
}

// script is a scripted MCP server: it answers initialize and
// notifications/initialized itself and hands tools/call POSTs and GETs to
// the test's functions, which write exactly the answer each case needs.
type script struct {
	t       *testing.T
	srv     *httptest.Server
	onCall  func(w http.ResponseWriter, r *http.Request, m mcp.Message, n int)
	onGet   func(w http.ResponseWriter, r *http.Request, n int)
	mu      sync.Mutex
	reqs    []seen
	calls   int
	gets    int
	session int
	// failInit answers that many initialize requests, the first, with 500.
	failInit int
}

func newScript(t *testing.T) *script {
	s := &script{t: t}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *script) url() string { return s.srv.URL + "/mcp" }

func (s *script) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := seen{
		method: r.Method, session: r.Header.Get(mcp.HeaderSessionID), protocol: r.Header.Get(mcp.HeaderProtocolVersion),
		accept: r.Header.Get("Accept"), lastEventID: r.Header.Get(mcp.HeaderLastEventID),
		hasLastID: len(r.Header.Values(mcp.HeaderLastEventID)) > 0, at: time.Now(),
		remote: r.RemoteAddr,
	}
	if r.Method == http.MethodPost {
		m, err := mcp.ParseMessage(body)
		assert.NoError(s.t, err)
		rec.rpc, rec.msg = m.Method, m
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, rec)
	var n int
	switch {
	case r.Method == http.MethodGet:
		s.gets++
		n = s.gets
	case rec.rpc == mcp.MethodToolsCall:
		s.calls++
		n = s.calls
	case rec.rpc == mcp.MethodInitialize:
		s.session++
		n = s.session
	}
	s.mu.Unlock()
	switch {
	case rec.rpc == mcp.MethodInitialize && n <= s.failInit:
		http.Error(w, "upstream unavailable", http.StatusInternalServerError)
	case rec.rpc == mcp.MethodInitialize:
		s.initialize(w, rec.msg, n)
	case rec.rpc == mcp.MethodInitialized:
		w.WriteHeader(http.StatusAccepted)
	case rec.rpc == mcp.MethodToolsCall:
		s.onCall(w, r, rec.msg, n)
	case r.Method == http.MethodGet && s.onGet != nil:
		s.onGet(w, r, n)
	default:
		http.Error(w, "unexpected", http.StatusMethodNotAllowed)
	}
}

func (s *script) initialize(w http.ResponseWriter, m mcp.Message, n int) {
	var p mcp.InitializeParams
	assert.NoError(s.t, json.Unmarshal(m.Params, &p))
	res, err := mcp.NewResult(m.ID, mcp.InitializeResult{ProtocolVersion: p.ProtocolVersion, Capabilities: json.RawMessage(`{}`)})
	assert.NoError(s.t, err)
	w.Header().Set(mcp.HeaderSessionID, fmt.Sprintf("s%d", n))
	w.Header().Set("Content-Type", mcp.ContentTypeJSON)
	assert.NoError(s.t, json.NewEncoder(w).Encode(res))
}

// requests returns what the server saw, filtered by kind: "GET", or a
// JSON-RPC method.
func (s *script) requests(kind string) []seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []seen
	for _, r := range s.reqs {
		if r.method == kind || r.rpc == kind {
			out = append(out, r)
		}
	}
	return out
}

// sse starts an SSE answer.
func sse(w http.ResponseWriter) {
	w.Header().Set("Content-Type", mcp.ContentTypeSSE)
	w.WriteHeader(http.StatusOK)
	flush(w)
}

func flush(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }

func send(t *testing.T, w http.ResponseWriter, ev mcp.Event) {
	assert.NoError(t, mcp.WriteEvent(w, ev))
	flush(w)
}

func priming(t *testing.T, w http.ResponseWriter, id string, retry time.Duration) {
	send(t, w, mcp.Event{ID: id, Retry: retry})
}

func progress(t *testing.T, w http.ResponseWriter, id string, token json.RawMessage, seq int) {
	n, err := mcp.NewNotification(mcp.MethodProgress, mcp.ProgressParams{ProgressToken: token, Progress: float64(seq)})
	assert.NoError(t, err)
	b, err := json.Marshal(n)
	assert.NoError(t, err)
	send(t, w, mcp.Event{ID: id, Data: b})
}

func result(t *testing.T, w http.ResponseWriter, id string, reqID json.RawMessage, r mcp.CallResult) {
	m, err := mcp.NewResult(reqID, r)
	assert.NoError(t, err)
	b, err := json.Marshal(m)
	assert.NoError(t, err)
	send(t, w, mcp.Event{ID: id, Data: b})
}

func okResult() mcp.CallResult {
	return mcp.CallResult{Content: []mcp.Content{{Type: "text", Text: "done"}}, StructuredContent: json.RawMessage(`{"charged":true}`)}
}

// reset cuts the connection under a handler with an RST.
func reset(t *testing.T, w http.ResponseWriter) {
	flush(w)
	c, _, err := http.NewResponseController(w).Hijack()
	assert.NoError(t, err)
	if tc, ok := c.(*net.TCPConn); ok {
		assert.NoError(t, tc.SetLinger(0))
	}
	assert.NoError(t, c.Close())
}

// token is the progress token a tools/call carries.
func token(t *testing.T, m mcp.Message) json.RawMessage {
	var p struct {
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	assert.NoError(t, json.Unmarshal(m.Params, &p))
	assert.NotEmpty(t, p.Meta.ProgressToken, "tools/call carries _meta.progressToken")
	return p.Meta.ProgressToken
}

// rig holds a client's options and its history.
type rig struct {
	opts workload.Options
	buf  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

func newRig(endpoint string) *rig {
	buf := &syncBuffer{}
	return &rig{buf: buf, opts: workload.Options{
		Endpoint: endpoint,
		Backoff:  workload.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Retries: 4},
		Seed:     7,
		Clock:    runclock.Start(),
		History:  history.NewWriter(buf, runclock.Start()),
	}}
}

func (g *rig) history(t *testing.T) []history.Record {
	recs, err := history.Read(bytes.NewReader(g.buf.bytes()))
	require.NoError(t, err)
	return recs
}

func kinds(recs []history.Record, k history.Kind) []history.Record {
	var out []history.Record
	for _, r := range recs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

func charge(id string) workload.Call {
	return workload.Call{ID: id, Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: 50 * time.Millisecond}
}

func chatty(id string, events int) workload.Call {
	return workload.Call{ID: id, Tool: mcp.ToolChatty, Args: map[string]any{"events": events}, Duration: 10 * time.Millisecond}
}

func runClient(t *testing.T, target string, g *rig, calls ...workload.Call) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return Run(ctx, target, g.opts, workload.Client{ID: "c1", Calls: calls})
}

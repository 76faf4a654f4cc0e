package mcpgo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/workload"
)

func newLedger() *sideeffects.Memory { return sideeffects.NewMemory() }

func kindIs(k sideeffects.Kind) func(sideeffects.Record) bool {
	return func(r sideeffects.Record) bool { return r.Kind == k }
}

// heldEvent is a ledger that holds the event_emitted record of seq until
// release is closed. A tool records an event before it sends it, so the
// event cannot go out before then: a test cuts a stream between two events
// however the machine schedules the tool.
type heldEvent struct {
	*sideeffects.Memory
	seq     int64
	release chan struct{}
}

func holdEvent(l *sideeffects.Memory, seq int64) heldEvent {
	return heldEvent{Memory: l, seq: seq, release: make(chan struct{})}
}

func (h heldEvent) Record(ctx context.Context, r sideeffects.Record) error {
	if r.Kind == sideeffects.KindEventEmitted && r.Seq == h.seq {
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Memory.Record(ctx, r)
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// serve starts h on 127.0.0.1:0 and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

// proxy is an in-process Toxiproxy proxy in front of upstream (host:port).
type proxy struct {
	p   *toxiproxy.Proxy
	URL string
}

func newProxy(t *testing.T, upstreamURL string) *proxy {
	t.Helper()
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(srv, "p", "127.0.0.1:0", strings.TrimPrefix(upstreamURL, "http://"))
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
	return &proxy{p: p, URL: "http://" + p.Listen}
}

// cut closes every connection through the proxy and accepts new ones again
// at once.
func (p *proxy) cut(t *testing.T) {
	t.Helper()
	p.p.Stop()
	require.NoError(t, p.p.Start())
}

// runClient runs run for one logical client and returns its history.
func runClient(t *testing.T, run func(context.Context, workload.Options, workload.Client) error,
	endpoint string, calls ...workload.Call) []history.Record {
	t.Helper()
	return runWatched(t, run, endpoint, newWatch(), calls...)
}

// runWatched is runClient with w watching the history as it is written.
func runWatched(t *testing.T, run func(context.Context, workload.Options, workload.Client) error,
	endpoint string, w *watch, calls ...workload.Call) []history.Record {
	t.Helper()
	clock := runclock.Start()
	opts := workload.Options{Endpoint: endpoint, Clock: clock, History: history.NewWriter(w, clock)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, run(ctx, opts, workload.Client{ID: "client-1", Calls: calls}))
	return w.records()
}

// watch is a history sink that signals the records tests wait on.
type watch struct {
	// hold, if set, is called with every record before it is stored; the
	// client writing the record waits until hold returns.
	hold    func(history.Record)
	mu      sync.Mutex
	recs    []history.Record
	waiters []histWaiter
}

type histWaiter struct {
	match func(history.Record) bool
	ch    chan struct{}
}

func newWatch() *watch { return &watch{} }

// Write takes one history line, as history.Writer writes them.
func (w *watch) Write(p []byte) (int, error) {
	var r history.Record
	if err := json.Unmarshal(p, &r); err != nil {
		return 0, err
	}
	if w.hold != nil {
		w.hold(r)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, r)
	kept := w.waiters[:0]
	for _, hw := range w.waiters {
		if hw.match(r) {
			close(hw.ch)
			continue
		}
		kept = append(kept, hw)
	}
	w.waiters = kept
	return len(p), nil
}

func (w *watch) on(match func(history.Record) bool) <-chan struct{} {
	ch := make(chan struct{})
	w.mu.Lock()
	w.waiters = append(w.waiters, histWaiter{match, ch})
	w.mu.Unlock()
	return ch
}

func (w *watch) records() []history.Record {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]history.Record(nil), w.recs...)
}

func charge(id string, d time.Duration) workload.Call {
	return workload.Call{ID: id, Tool: "charge", Args: map[string]any{"amount_cents": 4999}, Duration: d}
}

func chatty(id string, events int, d time.Duration) workload.Call {
	return workload.Call{ID: id, Tool: "chatty", Args: map[string]any{"events": events}, Duration: d}
}

func historyKinds(recs []history.Record) []history.Kind {
	out := make([]history.Kind, 0, len(recs))
	for _, r := range recs {
		out = append(out, r.Kind)
	}
	return out
}

// raw is a hand-driven MCP session over plain HTTP, for asserting exactly
// what a server answers.
type raw struct {
	t       *testing.T
	url     string
	session string
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawConnect initializes a session on the MCP endpoint url.
func rawConnect(t *testing.T, url string) *raw {
	t.Helper()
	r := &raw{t: t, url: url}
	resp := r.post(rawInitialize)
	r.session = resp.Header.Get("Mcp-Session-Id")
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.NotEmpty(t, r.session)
	resp = r.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	return r
}

func (r *raw) request(method, body string) *http.Request {
	req, err := http.NewRequest(method, r.url, strings.NewReader(body))
	require.NoError(r.t, err)
	if r.session != "" {
		req.Header.Set("Mcp-Session-Id", r.session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

func (r *raw) do(req *http.Request) *http.Response {
	resp, err := http.DefaultClient.Do(req)
	require.NoError(r.t, err)
	r.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func (r *raw) post(body string) *http.Response { return r.do(r.request(http.MethodPost, body)) }

// resume sends GET with Last-Event-ID.
func (r *raw) resume(lastEventID string) *http.Response {
	req := r.request(http.MethodGet, "")
	req.Header.Set("Last-Event-ID", lastEventID)
	return r.do(req)
}

// sse reads every event of resp's stream until it ends.
func sse(t *testing.T, resp *http.Response) []mcpwire.Event {
	t.Helper()
	er := mcpwire.NewEventReader(resp.Body)
	var out []mcpwire.Event
	for {
		ev, err := er.Next()
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			return out
		}
		out = append(out, ev)
	}
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

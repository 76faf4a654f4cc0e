package sdksuite

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	refclient "github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// serve starts srv with cfg on 127.0.0.1:0 and returns its base URL. The
// server is closed before the HTTP server, so that no hanging SSE request
// keeps the HTTP server's Close waiting.
func serve(t *testing.T, srv serverTarget, cfg serverConfig) string {
	t.Helper()
	_, url := start(t, srv, cfg)
	return url
}

func start(t *testing.T, srv serverTarget, cfg serverConfig) (handler, string) {
	t.Helper()
	if cfg.recorder == nil {
		cfg.recorder = sideeffects.NewMemory()
	}
	h, err := srv.start(cfg)
	require.NoError(t, err)
	return h, mount(t, h)
}

// mount serves h on 127.0.0.1:0 until the test ends, and returns its base
// URL.
func mount(t *testing.T, h handler) string {
	t.Helper()
	url := listen(t, h.Handler())
	// Registered after listen, so it runs first.
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	return url
}

// startServer starts an SDK's server writing to a fresh ledger.
func startServer(t *testing.T, s sdk, cfg serverConfig) (handler, *sideeffects.Memory, string) {
	t.Helper()
	l := sideeffects.NewMemory()
	cfg.recorder = l
	h, url := start(t, s.server, cfg)
	return h, l, url
}

// listen serves h on 127.0.0.1:0 and returns its base URL.
func listen(t *testing.T, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}

func resumable(ctx context.Context, opts workload.Options, c workload.Client) error {
	return refclient.Run(ctx, refclient.TargetResumable, opts, c)
}

// atVersion runs run asking for protocol version v.
func atVersion(run runFunc, v string) runFunc {
	return func(ctx context.Context, opts workload.Options, c workload.Client) error {
		opts.Protocol = v
		return run(ctx, opts, c)
	}
}

func kindIs(k sideeffects.Kind) func(sideeffects.Record) bool {
	return func(r sideeffects.Record) bool { return r.Kind == k }
}

func kinds(recs []sideeffects.Record) map[sideeffects.Kind]int {
	out := map[sideeffects.Kind]int{}
	for _, r := range recs {
		out[r.Kind]++
	}
	return out
}

// awaitCount waits until l holds at least n records of kind k.
func awaitCount(t *testing.T, l *sideeffects.Memory, k sideeffects.Kind, n int, what string) {
	t.Helper()
	for {
		next := l.Next(kindIs(k))
		if l.Count(k) >= n {
			return
		}
		await(t, next, what)
	}
}

// held is a ledger that holds the first record match matches until
// release is closed: the tool writing it waits. A tool records an event
// before it sends it, and a charge before it returns, so a test cuts a
// stream between two events, or acts while a call is in flight, however
// the machine schedules the tool.
type held struct {
	*sideeffects.Memory
	match   func(sideeffects.Record) bool
	release chan struct{}
}

func hold(l *sideeffects.Memory, match func(sideeffects.Record) bool) held {
	return held{Memory: l, match: match, release: make(chan struct{})}
}

// holdEvent holds the event_emitted record of seq.
func holdEvent(l *sideeffects.Memory, seq int64) held {
	return hold(l, func(r sideeffects.Record) bool { return r.Kind == sideeffects.KindEventEmitted && r.Seq == seq })
}

func (h held) Record(ctx context.Context, r sideeffects.Record) error {
	if h.match(r) {
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

// cutWhen cuts every connection through p once trigger fires, then calls
// then (if not nil). The client's unknown record waits until the proxy
// accepts again, so that its next call does not find it refusing, and
// until every channel of also is closed.
func cutWhen(t *testing.T, p *proxy, w *watch, trigger <-chan struct{}, then func(), also ...<-chan struct{}) {
	healed := make(chan struct{})
	w.hold = func(r history.Record) {
		if r.Kind == history.KindUnknown {
			for _, ch := range append([]<-chan struct{}{healed}, also...) {
				<-ch
			}
		}
	}
	go func() {
		await(t, trigger, "the call to be under way")
		p.cut(t)
		close(healed)
		if then != nil {
			then()
		}
	}()
}

// runClient runs run for one logical client and returns its history.
func runClient(t *testing.T, run runFunc, endpoint string, calls ...workload.Call) []history.Record {
	t.Helper()
	return runWatched(t, run, endpoint, newWatch(), calls...)
}

// runWatched is runClient with w watching the history as it is written and
// the client's HTTP responses as they arrive.
func runWatched(t *testing.T, run runFunc, endpoint string, w *watch, calls ...workload.Call) []history.Record {
	t.Helper()
	clock := runclock.Start()
	opts := workload.Options{Endpoint: endpoint, Clock: clock, History: history.NewWriter(w, clock)}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, run(w.trace(ctx), opts, workload.Client{ID: "client-1", Calls: calls}))
	return w.records()
}

// watch is a history sink that signals the records tests wait on, and an
// HTTP trace that signals the first response byte after an invoke: the
// moment the answer to a tools/call starts arriving.
type watch struct {
	// hold, if set, is called with every record before it is stored; the
	// client writing the record waits until hold returns.
	hold    func(history.Record)
	mu      sync.Mutex
	recs    []history.Record
	waiters []histWaiter
	armed   bool          // an invoke was written, its answer not yet seen
	answer  chan struct{} // closed at the first response byte after an invoke
}

type histWaiter struct {
	match func(history.Record) bool
	ch    chan struct{}
}

func newWatch() *watch { return &watch{answer: make(chan struct{})} }

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
	if r.Kind == history.KindInvoke {
		w.armed = true
	}
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

// answering returns a channel closed once the first byte of the answer to
// the first tools/call has arrived.
func (w *watch) answering() <-chan struct{} { return w.answer }

func (w *watch) trace(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.armed {
			w.armed = false
			select {
			case <-w.answer:
			default:
				close(w.answer)
			}
		}
	}})
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

func withoutEvents(recs []history.Record) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		if r.Kind != history.KindEvent {
			out = append(out, r.Kind)
		}
	}
	return out
}

// onlyKinds lists the kinds of the records whose kind is one of ks.
func onlyKinds(recs []history.Record, ks ...history.Kind) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		if slices.Contains(ks, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}

// events returns the seq of every event record, in order.
func events(recs []history.Record) []int64 {
	var out []int64
	for _, r := range recs {
		if r.Kind == history.KindEvent {
			out = append(out, r.Seq)
		}
	}
	return out
}

func only(recs []history.Record, k history.Kind) []history.Record {
	var out []history.Record
	for _, r := range recs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

// between returns the records after the first of kind from and before the
// next of kind to.
func between(recs []history.Record, from, to history.Kind) []history.Record {
	var out []history.Record
	in := false
	for _, r := range recs {
		switch {
		case !in && r.Kind == from:
			in = true
		case in && r.Kind == to:
			return out
		case in:
			out = append(out, r)
		}
	}
	return out
}

// newHTTPClient is an HTTP client of the test's own: no test reuses a
// kept connection to another test's server, closed since, whose port a
// new server may have taken.
func newHTTPClient(t *testing.T) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// raw is a hand-driven MCP session over plain HTTP, for asserting exactly
// what a server answers.
type raw struct {
	t       *testing.T
	hc      *http.Client
	url     string
	session string
}

const rawInitialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
	`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// rawConnect initializes a session on the MCP endpoint url.
func rawConnect(t *testing.T, url string) *raw {
	t.Helper()
	r := &raw{t: t, hc: newHTTPClient(t), url: url}
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
	resp, err := r.hc.Do(req)
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
func sse(t *testing.T, resp *http.Response) []mcp.Event {
	t.Helper()
	er := mcp.NewEventReader(resp.Body)
	var out []mcp.Event
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

package proxy_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// burstEvents is the size of one burst of the throughput benchmarks.
const burstEvents = 500

// BenchmarkObserver measures the wire observer on streams of progress
// notifications through Toxiproxy, in one run: Toxiproxy alone, as the
// proxy agent embeds it (toxiproxy), against Toxiproxy observed as the
// agent observes it (observed): the observer accepts the connection,
// dials the server and hands both sockets to the proxy's links
// (proxy.Link), with a sink that encodes every record as the agent's
// wire.jsonl writer does, into nothing (the observer's whole cost but the
// disk's). Two servers write the streams:
//
//   - stream: a minimal server that writes each event as fast as the
//     connection takes it, and a client that reads each as our clients do:
//     the least work per event outside the proxy, so the largest share for
//     the observer;
//   - reference: chaosrun's reference server, one chatty call of
//     burstEvents events per burst, on a session initialized once, the
//     same client.
//
// For each:
//
//   - toxiproxy, observed: events/s of each pipeline on its own; one op is
//     a burst of burstEvents events;
//   - interleaved: the two take turns burst by burst, the first of each
//     round alternating, so that both see the same load on a shared
//     machine: events/s of the median burst of each, and loss_%, the
//     median over the rounds of how many fewer events/s the observed
//     proxy passed.
//
// And latency: per-event delivery time on the minimal server's stream
// (written by the server to parsed by the client), one event at a time
// (the next is written once the last arrived), the two pipelines taking
// turns event by event: p50 and p99 of each, and added_µs, the observed
// one's less Toxiproxy's.
func BenchmarkObserver(b *testing.B) {
	for _, src := range []source{streamSource{}, referenceSource{}} {
		b.Run(src.name(), func(b *testing.B) {
			for _, p := range pipelines(src) {
				b.Run(p.name, func(b *testing.B) {
					p.start(b)
					var took time.Duration
					for b.Loop() {
						took += p.burst(burstEvents)
					}
					b.ReportMetric(float64(b.N*burstEvents)/took.Seconds(), "events/s")
				})
			}
			b.Run("interleaved", func(b *testing.B) { interleaved(b, src) })
		})
	}
	b.Run("latency", latency)
}

func interleaved(b *testing.B, src source) {
	ps := pipelines(src)
	for _, p := range ps {
		p.start(b)
	}
	// Medians over the rounds leave out the rounds a neighbour's load
	// spoilt.
	var alone, observed []time.Duration
	var ratio []float64
	for round := 0; b.Loop(); round++ {
		var d, o time.Duration
		if round%2 == 0 {
			d, o = ps[0].burst(burstEvents), ps[1].burst(burstEvents)
		} else {
			o, d = ps[1].burst(burstEvents), ps[0].burst(burstEvents)
		}
		alone, observed, ratio = append(alone, d), append(observed, o), append(ratio, float64(d)/float64(o))
	}
	b.ReportMetric(burstEvents/median(alone).Seconds(), "toxiproxy_events/s")
	b.ReportMetric(burstEvents/median(observed).Seconds(), "observed_events/s")
	b.ReportMetric(100*(1-median(ratio)), "loss_%")
}

func latency(b *testing.B) {
	ps := pipelines(streamSource{})
	for _, p := range ps {
		p.start(b)
	}
	times := make([][]time.Duration, len(ps))
	for round := 0; b.Loop(); round++ {
		for k := range ps {
			i := (k + round) % len(ps)
			times[i] = append(times[i], ps[i].conn.(*eventStream).one())
		}
	}
	µs := func(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
	for _, q := range []struct {
		name string
		q    float64
	}{{"p50", 0.50}, {"p99", 0.99}} {
		d, o := quantile(times[0], q.q), quantile(times[1], q.q)
		b.ReportMetric(µs(d), q.name+"_toxiproxy_µs")
		b.ReportMetric(µs(o), q.name+"_observed_µs")
		b.ReportMetric(µs(o-d), q.name+"_added_µs")
	}
}

// A source is a server that writes bursts of progress events, and the
// client that reads them.
type source interface {
	name() string
	// serve starts a server and returns its address and a function that
	// starts its client on the address the pipeline gives it.
	serve(b *testing.B) (addr string, connect func(addr string) bursts)
}

// bursts reads bursts of events.
type bursts interface {
	// burst has the server write n events, reads them, and returns how
	// long that took.
	burst(n int) time.Duration
}

// pipeline is client → Toxiproxy → server, observed at both edges when
// sink is set.
type pipeline struct {
	name string
	src  source
	sink observer.Sink
	conn bursts
}

// pipelines are the two configurations compared: Toxiproxy alone, and
// Toxiproxy observed, writing wire records.
func pipelines(src source) []*pipeline {
	w := wire.NewWriter(io.Discard)
	sink := observer.SinkFunc(func(r *wire.Record) { _, _ = w.Write(r) })
	return []*pipeline{{name: "toxiproxy", src: src}, {name: "observed", src: src, sink: sink}}
}

func (p *pipeline) start(b *testing.B) {
	b.Helper()
	addr, connect := p.src.serve(b)
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	tp := toxiproxy.NewProxy(api, "mcp", "127.0.0.1:0", addr)
	require.NoError(b, tp.Start())
	b.Cleanup(tp.Stop)
	if p.sink == nil {
		p.conn = connect(tp.Listen)
	} else {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(b, err)
		t, err := observer.Start(context.Background(), ln, observer.Config{Upstream: addr, Clock: runclock.Start(), Sink: p.sink,
			Relay: func(c *observer.Conn) { proxy.Link(api, tp, c) }})
		require.NoError(b, err)
		b.Cleanup(func() { require.NoError(b, t.Close()) })
		p.conn = connect(t.Addr())
	}
	p.burst(1) // the connections are open and warm
}

func (p *pipeline) burst(n int) time.Duration { return p.conn.burst(n) }

// benchBase is the one clock of the latency benchmark: events carry the
// time they were written as nanoseconds since it, read on the same
// process's monotonic clock.
var benchBase = time.Now()

// streamSource is the minimal server: an SSE stream of small progress
// notifications on GET /, each number received on its channel a burst of
// that many events, written as fast as the connection takes them, each
// flushed on its own, each carrying the time it was written.
type streamSource struct{}

func (streamSource) name() string { return "stream" }

func (streamSource) serve(b *testing.B) (string, func(string) bursts) {
	b.Helper()
	sizes := make(chan int)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", mcp.ContentTypeSSE)
		w.WriteHeader(http.StatusOK)
		flush := http.NewResponseController(w)
		if flush.Flush() != nil {
			return
		}
		for i := 1; ; {
			var n int
			select {
			case n = <-sizes:
			case <-r.Context().Done():
				return
			}
			for end := i + n; i < end; i++ {
				data := fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1-1","progress":%d,"total":1000000,"message":"%d"}}`,
					i, time.Since(benchBase).Nanoseconds())
				if mcp.WriteEvent(w, mcp.Event{ID: fmt.Sprint(i), Data: data}) != nil || flush.Flush() != nil {
					return
				}
			}
		}
	})
	return serveHTTP(b, h), func(addr string) bursts { return openStream(b, addr, sizes) }
}

func serveHTTP(b *testing.B, h http.Handler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// eventStream is the minimal server's client.
type eventStream struct {
	b      *testing.B
	sizes  chan<- int // the size of each burst to write
	events *mcp.EventReader
}

func openStream(b *testing.B, addr string, sizes chan<- int) *eventStream {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	require.NoError(b, err)
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	require.NoError(b, err)
	b.Cleanup(func() { resp.Body.Close() })
	return &eventStream{b: b, sizes: sizes, events: mcp.NewEventReader(resp.Body)}
}

func (s *eventStream) burst(n int) time.Duration {
	start := time.Now()
	s.sizes <- n
	for range n {
		s.read()
	}
	return time.Since(start)
}

// one has the server write one event and returns how long it took to
// reach the client.
func (s *eventStream) one() time.Duration {
	s.sizes <- 1
	sent := s.read()
	return time.Since(benchBase) - sent
}

// read reads one event, parses its message as our clients do, and returns
// the time it was written.
func (s *eventStream) read() time.Duration {
	ev, err := s.events.Next()
	if err != nil {
		s.b.Fatalf("read event: %v", err)
	}
	p := progress(s.b, ev.Data)
	var sent int64
	_, _ = fmt.Sscan(p.Message, &sent)
	return time.Duration(sent)
}

// progress parses a progress notification as our clients do.
func progress(b *testing.B, data []byte) mcp.ProgressParams {
	m, err := mcp.ParseMessage(data)
	if err != nil || m.Method != mcp.MethodProgress {
		b.Fatalf("not a progress notification: %q (%v)", data, err)
	}
	var p mcp.ProgressParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		b.Fatalf("parse progress: %v", err)
	}
	return p
}

// referenceSource is chaosrun's reference server, with a bounded event log
// and a ledger that keeps nothing.
type referenceSource struct{}

func (referenceSource) name() string { return "reference" }

// noLedger is a ledger that keeps nothing.
type noLedger struct{}

func (noLedger) Record(context.Context, sideeffects.Record) error { return nil }

func (referenceSource) serve(b *testing.B) (string, func(string) bursts) {
	b.Helper()
	srv, err := server.New(server.Config{Recorder: noLedger{}, RetentionEvents: 2 * burstEvents})
	require.NoError(b, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), func(addr string) bursts { return openSession(b, addr) }
}

// mcpSession is an MCP session on the reference server: each burst is one
// chatty call, its progress events read and parsed as our clients do.
type mcpSession struct {
	b      *testing.B
	client *http.Client
	url    string
	id     string
	calls  int64
}

func openSession(b *testing.B, addr string) *mcpSession {
	b.Helper()
	tr := &http.Transport{}
	b.Cleanup(tr.CloseIdleConnections)
	s := &mcpSession{b: b, client: &http.Client{Transport: tr}, url: "http://" + addr + "/mcp"}
	resp := s.post(mcp.MethodInitialize, map[string]any{"protocolVersion": mcp.Version20251125,
		"capabilities": map[string]any{}, "clientInfo": mcp.Implementation{Name: "bench", Version: "1"}})
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	s.id = resp.Header.Get(mcp.HeaderSessionID)
	require.NotEmpty(b, s.id)
	resp = s.post(mcp.MethodInitialized, nil)
	resp.Body.Close()
	require.Equal(b, http.StatusAccepted, resp.StatusCode)
	return s
}

// post sends one request, or a notification when params is nil.
func (s *mcpSession) post(method string, params any) *http.Response {
	var body []byte
	var err error
	if params == nil {
		body, err = json.Marshal(map[string]string{"jsonrpc": "2.0", "method": method})
	} else {
		s.calls++
		var m mcp.Message
		m, err = mcp.NewRequest(s.calls, method, params)
		require.NoError(s.b, err)
		body, err = json.Marshal(m)
	}
	require.NoError(s.b, err)
	req, err := http.NewRequest(http.MethodPost, s.url, bytes.NewReader(body))
	require.NoError(s.b, err)
	req.Header.Set("Content-Type", mcp.ContentTypeJSON)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if s.id != "" {
		req.Header.Set(mcp.HeaderSessionID, s.id)
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.Version20251125)
	}
	resp, err := s.client.Do(req)
	require.NoError(s.b, err)
	return resp
}

func (s *mcpSession) burst(n int) time.Duration {
	start := time.Now()
	resp := s.post(mcp.MethodToolsCall, map[string]any{"name": mcp.ToolChatty,
		"arguments": mcp.ChattyArgs{Events: n}, "_meta": map[string]any{"progressToken": s.calls + 1}})
	defer resp.Body.Close()
	require.Equal(s.b, http.StatusOK, resp.StatusCode)
	events := mcp.NewEventReader(resp.Body)
	for got := 0; ; {
		ev, err := events.Next()
		require.NoError(s.b, err)
		switch {
		case len(ev.Data) == 0: // a priming event
		case strings.Contains(string(ev.Data), `"result"`):
			require.Equal(s.b, n, got, "progress events of the call")
			return time.Since(start)
		default:
			progress(s.b, ev.Data)
			got++
		}
	}
}

// quantile is the q-quantile of xs (which it sorts).
func quantile[T cmp.Ordered](xs []T, q float64) T {
	slices.Sort(xs)
	return xs[int(q*float64(len(xs)-1))]
}

func median[T cmp.Ordered](xs []T) T { return quantile(xs, 0.5) }

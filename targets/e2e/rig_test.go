package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// runTimeout bounds every client run, so a hang fails the test.
const runTimeout = 20 * time.Second

// env is one experiment on loopback: the reference server, a Toxiproxy
// proxy in front of it, the ledger the server records into, and the
// client's history.
type env struct {
	t      *testing.T
	clock  runclock.Clock
	ledger *sideeffects.Memory
	cfg    server.Config
	addr   string // the server's listen address, kept across restarts
	srv    *server.Server
	served chan error
	proxy  *toxiproxy.Proxy
	hist   *watch
}

func newEnv(t *testing.T, cfg server.Config) *env {
	e := &env{t: t, clock: runclock.Start(), ledger: sideeffects.NewMemory(), hist: &watch{}}
	cfg.Recorder, cfg.Clock = e.ledger, e.clock
	e.cfg = cfg
	e.startServer("127.0.0.1:0")
	t.Cleanup(func() { e.stopServer(true) })

	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	e.proxy = toxiproxy.NewProxy(api, "mcp", "127.0.0.1:0", e.addr)
	require.NoError(t, e.proxy.Start())
	t.Cleanup(e.proxy.Stop)
	return e
}

// startServer serves a new server process-equivalent on addr.
func (e *env) startServer(addr string) {
	srv, err := server.New(e.cfg)
	require.NoError(e.t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(e.t, err)
	e.addr, e.srv, e.served = ln.Addr().String(), srv, make(chan error, 1)
	go func() { e.served <- srv.Serve(ln) }()
}

// stopServer ends the server: abruptly (Close, as a crash would) or
// gracefully (Shutdown, letting running tools finish).
func (e *env) stopServer(crash bool) {
	if e.srv == nil {
		return
	}
	if crash {
		require.NoError(e.t, e.srv.Close())
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(e.t, e.srv.Shutdown(ctx))
	}
	require.NoError(e.t, <-e.served)
	e.srv = nil
}

func (e *env) endpoint() string { return "http://" + e.proxy.Listen + "/mcp" }

// cut closes every connection through the proxy and accepts new ones at
// once.
func (e *env) cut() {
	e.proxy.Stop()
	require.NoError(e.t, e.proxy.Start())
}

// partition closes every connection and refuses new ones until heal
// holds.
func (e *env) partition(heal func() bool) {
	e.proxy.Stop()
	require.Eventually(e.t, heal, runTimeout, time.Millisecond, "the partition never healed")
	require.NoError(e.t, e.proxy.Start())
}

func (e *env) options(backoff workload.Backoff) workload.Options {
	return workload.Options{
		Endpoint: e.endpoint(),
		Backoff:  backoff,
		Seed:     1,
		Clock:    e.clock,
		History:  history.NewWriter(e.hist, e.clock),
	}
}

// run starts a client in the background; the returned channel gets Run's
// error.
func (e *env) run(target string, opts workload.Options, calls ...workload.Call) <-chan error {
	done := make(chan error, 1)
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	go func() {
		defer cancel()
		done <- client.Run(ctx, target, opts, workload.Client{ID: "c1", Calls: calls})
	}()
	return done
}

// ledgerCount counts ledger records of kind k that match.
func (e *env) ledgerCount(k sideeffects.Kind, match func(sideeffects.Record) bool) int {
	n := 0
	for _, r := range e.ledger.Records() {
		if r.Kind == k && (match == nil || match(r)) {
			n++
		}
	}
	return n
}

// status reads the server's control status.
func (e *env) inflight() int {
	resp, err := http.Get("http://" + e.addr + "/control/status")
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var st struct {
		InflightCalls int `json:"inflight_calls"`
	}
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&st))
	return st.InflightCalls
}

// watch is a history sink that lets a test wait for a record.
type watch struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	waiters []waiter
}

type waiter struct {
	match func(history.Record) bool
	ch    chan struct{}
}

func (w *watch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	var r history.Record
	if json.Unmarshal(p, &r) == nil {
		kept := w.waiters[:0]
		for _, wt := range w.waiters {
			if wt.match(r) {
				close(wt.ch)
				continue
			}
			kept = append(kept, wt)
		}
		w.waiters = kept
	}
	return len(p), nil
}

// await blocks until a record matching f is written (or was already).
func (w *watch) await(t *testing.T, what string, f func(history.Record) bool) {
	t.Helper()
	w.mu.Lock()
	ch := make(chan struct{})
	recs, err := history.Read(bytes.NewReader(w.buf.Bytes()))
	require.NoError(t, err)
	seen := false
	for _, r := range recs {
		seen = seen || f(r)
	}
	if !seen {
		w.waiters = append(w.waiters, waiter{match: f, ch: ch})
	}
	w.mu.Unlock()
	if seen {
		return
	}
	select {
	case <-ch:
	case <-time.After(runTimeout):
		t.Fatalf("no %s in the history:\n%s", what, w.bytes())
	}
}

func (w *watch) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

func (w *watch) records(t *testing.T) []history.Record {
	recs, err := history.Read(bytes.NewReader(w.bytes()))
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

func isEvent(call string, seq int64) func(history.Record) bool {
	return func(r history.Record) bool {
		return r.Kind == history.KindEvent && r.Call == call && r.Seq >= seq
	}
}

func charge(id string, d time.Duration) workload.Call {
	return workload.Call{ID: id, Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: d}
}

func chatty(id string, events int, d time.Duration) workload.Call {
	return workload.Call{ID: id, Tool: mcp.ToolChatty, Args: map[string]any{"events": events}, Duration: d}
}

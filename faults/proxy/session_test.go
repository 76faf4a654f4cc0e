package proxy_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// session is a real MCP session on loopback: the resumable client, the
// observer relaying through a Toxiproxy proxy's links as the proxy agent
// does, and the reference server. The tap's sink is the proxy agent's: a
// wire.Writer (numbering the records) and then a trigger engine, whose
// firing cuts the connections through the proxy.
type session struct {
	tap  *observer.Tap
	sink *records
	cut  trigger.Firing
}

func newSession(t *testing.T) *session {
	t.Helper()
	clock := runclock.Start()
	srv, err := server.New(server.Config{Recorder: sideeffects.NewMemory(), Clock: clock, Retry: 10 * time.Millisecond})
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		require.NoError(t, srv.Close())
		require.NoError(t, <-served)
	})

	s := &session{sink: newRecords()}
	fired := make(chan trigger.Firing, 1)
	engine := trigger.NewEngine(clock, func(f trigger.Firing) { fired <- f })
	t.Cleanup(engine.Close)
	// The cut: once the chatty call's second progress event has reached
	// the client edge.
	require.NoError(t, engine.Arm(trigger.Trigger{ID: "cut", Event: trigger.EventSSEEvent, Tool: mcp.ToolChatty, Nth: 2, Edge: wire.EdgeClient}))
	w := wire.NewWriter(discard{})
	sink := observer.SinkFunc(func(r *wire.Record) {
		_, err := w.Write(r)
		assert.NoError(t, err)
		engine.Observe(r)
		s.sink.Observe(r)
	})
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(api, "mcp", "127.0.0.1:0", ln.Addr().String())
	tln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s.tap, err = observer.Start(context.Background(), tln, observer.Config{Upstream: p.Upstream, Clock: clock, Sink: sink,
		Relay: func(c *observer.Conn) { proxy.Link(api, p, c) }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.tap.Close()) })

	s.run(t, clock, s.tap.Addr(), fired)
	return s
}

// run runs the client's workload, a charge and then a chatty call, and
// cuts every connection through the proxy when the trigger fires, as the
// proxy agent does when the proxy is disabled.
func (s *session) run(t *testing.T, clock runclock.Clock, addr string, fired <-chan trigger.Firing) {
	cut := make(chan struct{})
	go func() {
		defer close(cut)
		select {
		case s.cut = <-fired:
		case <-time.After(waitFor):
			t.Error("the trigger never fired")
			return
		}
		for _, c := range s.tap.Conns() {
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	opts := workload.Options{
		Endpoint: "http://" + addr + "/mcp",
		Backoff:  workload.Backoff{Initial: time.Millisecond, Max: 10 * time.Millisecond, Retries: 8},
		Seed:     1,
		Clock:    clock,
		History:  history.NewWriter(discard{}, clock),
	}
	require.NoError(t, client.Run(ctx, client.TargetResumable, opts, workload.Client{ID: "c1", Calls: []workload.Call{
		{ID: "c1-1", Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: 20 * time.Millisecond},
		{ID: "c1-2", Tool: mcp.ToolChatty, Args: map[string]any{"events": 6}, Duration: 600 * time.Millisecond},
	}}))
	<-cut
	// The last records of both edges follow the client's return: the
	// closes of its connections.
	s.sink.awaitN(t, "every connection closed", func(r wire.Record) bool { return r.Kind == wire.KindOpen }, 1)
	require.Eventually(t, func() bool {
		recs := s.sink.all()
		return len(only(recs, kind(wire.KindOpen))) == len(only(recs, kind(wire.KindClose)))
	}, waitFor, time.Millisecond)
}

// waitFor bounds every wait of the session on the client, the proxy and
// the trigger.
const waitFor = 10 * time.Second

// records is a sink that keeps a copy of every record and lets a test wait
// for some.
type records struct {
	mu      sync.Mutex
	recs    []wire.Record
	changed chan struct{}
}

func newRecords() *records { return &records{changed: make(chan struct{})} }

func (c *records) Observe(r *wire.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.recs = append(c.recs, *observer.Clone(r))
	close(c.changed)
	c.changed = make(chan struct{})
}

func (c *records) all() []wire.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// awaitN returns the records once match holds for n of them, failing the
// test after waitFor.
func (c *records) awaitN(t testing.TB, what string, match func(wire.Record) bool, n int) []wire.Record {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		c.mu.Lock()
		recs, changed := slices.Clone(c.recs), c.changed
		c.mu.Unlock()
		if len(only(recs, match)) >= n {
			return recs
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s recorded in %s; records: %+v", what, waitFor, recs)
		}
	}
}

// kind matches records of one kind.
func kind(k wire.Kind) func(wire.Record) bool {
	return func(r wire.Record) bool { return r.Kind == k }
}

func only(recs []wire.Record, match func(wire.Record) bool) []wire.Record {
	var out []wire.Record
	for _, r := range recs {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func progressOf(r wire.Record) float64 {
	if r.Kind != wire.KindEvent || len(r.Messages) != 1 || r.Messages[0].Method != mcp.MethodProgress || r.Messages[0].Progress == nil {
		return 0
	}
	return *r.Messages[0].Progress
}

// messages lists the messages of one edge's records of the given kinds.
func messages(recs []wire.Record, edge wire.Edge, kinds ...wire.Kind) []wire.Message {
	var out []wire.Message
	for _, r := range recs {
		if r.Edge == edge && slices.Contains(kinds, r.Kind) {
			out = append(out, r.Messages...)
		}
	}
	return out
}

func TestRecordsOfAnMCPSession(t *testing.T) {
	s := newSession(t)
	recs := s.sink.all()
	n := slices.IndexFunc(recs, func(r wire.Record) bool { return r.N == s.cut.WireN })
	require.GreaterOrEqual(t, n, 0, "the record that fired the trigger: %+v", s.cut)
	assert.Equal(t, wire.EdgeClient, recs[n].Edge)
	assert.Equal(t, float64(2), progressOf(recs[n]), "the cut came at the second progress event at the client edge")
	for _, edge := range wire.Edges {
		t.Run(string(edge), func(t *testing.T) {
			sent := messages(recs, edge, wire.KindRequest)
			answers := messages(recs, edge, wire.KindResponse, wire.KindEvent)

			i := slices.IndexFunc(sent, func(m wire.Message) bool { return m.Method == mcp.MethodInitialize })
			require.GreaterOrEqual(t, i, 0, "the initialize request")
			assert.Equal(t, "c1", sent[i].ClientName)
			assert.Equal(t, mcp.LatestVersion, sent[i].Protocol)
			j := slices.IndexFunc(answers, func(m wire.Message) bool { return m.Response && m.ID == sent[i].ID })
			require.GreaterOrEqual(t, j, 0, "the initialize result")
			assert.Equal(t, mcp.LatestVersion, answers[j].Protocol)
			resp := only(recs, func(r wire.Record) bool { return r.Edge == edge && r.Kind == wire.KindResponse && r.Header != nil })
			require.NotEmpty(t, resp)
			session := resp[0].Header.SessionID
			assert.NotEmpty(t, session, "the session id header")

			var calls []wire.Message
			for _, m := range sent {
				if m.Method == mcp.MethodToolsCall {
					calls = append(calls, m)
				}
			}
			require.Len(t, calls, 2, "each call is invoked once")
			assert.Equal(t, mcp.ToolCharge, calls[0].Tool)
			var args map[string]any
			require.NoError(t, json.Unmarshal(calls[0].Args, &args))
			assert.Equal(t, "c1-1", args["order_id"])
			digest, err := wire.ArgsDigest(calls[0].Args)
			require.NoError(t, err)
			assert.Equal(t, digest, calls[0].ArgsDigest)
			assert.Equal(t, mcp.ToolChatty, calls[1].Tool)
			assert.NotEmpty(t, calls[1].ProgressToken)

			var progress []float64
			for _, r := range recs {
				if r.Edge == edge && progressOf(r) > 0 {
					progress = append(progress, progressOf(r))
					assert.NotEmpty(t, r.EventID)
					assert.Equal(t, calls[1].ProgressToken, r.Messages[0].ProgressToken)
				}
			}
			assert.Equal(t, []float64{1, 2, 3, 4, 5, 6}, progress, "every progress event once, across the cut")
			results := slices.IndexFunc(answers, func(m wire.Message) bool { return m.Response && m.ID == calls[1].ID })
			assert.GreaterOrEqual(t, results, 0, "the chatty call's result")

			resumes := only(recs, func(r wire.Record) bool {
				return r.Edge == edge && r.Kind == wire.KindRequest && r.Method == http.MethodGet
			})
			require.NotEmpty(t, resumes, "the resume")
			assert.NotEmpty(t, resumes[0].Header.LastEventID)
			assert.Equal(t, session, resumes[0].Header.SessionID)

			// The cut closed the connection carrying the chatty call's
			// stream: at the client edge the fault proxy ended it, at the
			// server edge it did too, from the other side.
			call := only(recs, func(r wire.Record) bool {
				return r.Edge == edge && r.Kind == wire.KindRequest && len(r.Messages) == 1 && r.Messages[0].ID == calls[1].ID
			})
			require.Len(t, call, 1)
			closes := only(recs, func(r wire.Record) bool { return r.Edge == edge && r.Kind == wire.KindClose && r.Conn == call[0].Conn })
			require.Len(t, closes, 1)
			want := map[wire.Edge]wire.Side{wire.EdgeClient: wire.SideServer, wire.EdgeServer: wire.SideClient}[edge]
			assert.Equal(t, want, closes[0].By, closes[0].Detail)
			assert.Equal(t, wire.EndFIN, closes[0].End)
			assert.Positive(t, closes[0].BytesUp)
			assert.Positive(t, closes[0].BytesDown)
		})
	}
}

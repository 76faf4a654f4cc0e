package faults_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

// fixture is a proxy agent observing a proxy "mcp" in front of a backend,
// as the runner builds it, a fake runtime, a server control endpoint and a
// fault log, all on loopback.
type fixture struct {
	t       *testing.T
	clock   runclock.Clock
	toxi    *toxiclient.Client
	agent   *proxy.Client
	listen  string // the proxy's address: its observed client edge
	procs   *fakeProcesses
	control *httptest.Server
	mu      sync.Mutex
	posts   []string // control paths posted to
	logPath string
	// triggers, when set, are the run's protocol triggers.
	triggers faults.Triggers
}

func newFixture(t *testing.T, upstream string) *fixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	clock := runclock.Start()
	agent, err := proxy.Start(context.Background(), ln, proxy.Options{Clock: clock})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, agent.Close()) })

	f := &fixture{t: t, clock: clock, toxi: toxiclient.NewClient(agent.URL()), agent: proxy.NewClient(agent.URL()), procs: &fakeProcesses{}}
	t.Cleanup(func() { assert.NoError(t, f.agent.Close()) })
	_, err = f.toxi.CreateProxy("mcp", "127.0.0.1:0", upstream)
	require.NoError(t, err)
	f.listen, err = f.agent.Observe(context.Background(), "mcp", "127.0.0.1:0")
	require.NoError(t, err)
	f.control = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.posts = append(f.posts, r.Method+" "+r.URL.Path)
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{"sessions":["s1"]}`)
	}))
	t.Cleanup(f.control.Close)
	f.logPath = filepath.Join(t.TempDir(), "faults.jsonl")
	return f
}

// run plans specs at scale 1 and runs them with a workload that starts now;
// progress hears every event along with the context's cancel.
func (f *fixture) run(ctx context.Context, specs []faults.Spec, progress func(faults.Event)) ([]faults.Entry, error) {
	f.t.Helper()
	return f.runPlan(ctx, faults.Plan(specs, 1, 1), progress)
}

// runPlan runs a plan with a workload that starts now and returns the
// fault log it wrote.
func (f *fixture) runPlan(ctx context.Context, plan []faults.Injection, progress func(faults.Event)) ([]faults.Entry, error) {
	f.t.Helper()
	log, err := faults.CreateLog(f.logPath)
	require.NoError(f.t, err)
	env := faults.Env{
		Clock: f.clock, WorkloadStart: f.clock.Now(), Toxiproxies: []*toxiclient.Client{f.toxi}, Proxy: "mcp",
		Processes: f.procs, ControlURL: f.control.URL, Log: log, Progress: progress, Edges: f.agent, Triggers: f.triggers,
	}
	runErr := faults.Run(ctx, env, plan)
	require.NoError(f.t, log.Close())
	entries, err := faults.LoadLog(f.logPath)
	require.NoError(f.t, err)
	return entries, runErr
}

func (f *fixture) toxicNames() []string {
	f.t.Helper()
	p, err := f.toxi.Proxy("mcp")
	require.NoError(f.t, err)
	var names []string
	for _, x := range p.ActiveToxics {
		names = append(names, x.Name)
	}
	slices.Sort(names)
	return names
}

func (f *fixture) enabled() bool {
	f.t.Helper()
	p, err := f.toxi.Proxy("mcp")
	require.NoError(f.t, err)
	return p.Enabled
}

func (f *fixture) controlPosts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.posts)
}

// serve runs handle for every connection to a loopback listener.
func serve(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// fakeProcesses records the process faults it is asked for, and answers
// each with fail.
type fakeProcesses struct {
	mu    sync.Mutex
	calls []string
	fail  error
}

func (p *fakeProcesses) record(s string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, s)
	return p.fail
}

func (p *fakeProcesses) Restart(_ context.Context, role string, graceful bool) error {
	if graceful {
		return p.record("restart graceful " + role)
	}
	return p.record("restart kill " + role)
}
func (p *fakeProcesses) Pause(_ context.Context, role string) error { return p.record("pause " + role) }
func (p *fakeProcesses) Resume(_ context.Context, role string) error {
	return p.record("resume " + role)
}

func (p *fakeProcesses) Kill(_ context.Context, name string) error { return p.record("kill " + name) }
func (p *fakeProcesses) Start(_ context.Context, name string) error {
	return p.record("start " + name)
}

func (p *fakeProcesses) list() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.calls)
}

func TestRunInjectsAndHealsEveryKind(t *testing.T) {
	cases := []struct {
		kind, params string
		target       string
		healed       bool                       // the kind is healed (not instant)
		during       func(*testing.T, *fixture) // checked while the fault is in effect
		after        func(*testing.T, *fixture) // checked once Run returned
	}{
		{kind: "idle_timeout", params: "{idle: 1s, close: fin}", target: "mcp", healed: true,
			during: toxics("idle_timeout-0-0")},
		{kind: "idle_timeout", params: "{idle: 10ms, close: reset, for: 60ms}", target: "mcp", healed: true,
			during: toxics("chaosrun-linger", "idle_timeout-0-0")},
		{kind: "reset", params: "{after: 10ms, for: 60ms}", target: "mcp", healed: true,
			during: toxics("chaosrun-linger")},
		{kind: "latency", params: "{latency: 5ms, jitter: 1ms, for: 60ms}", target: "mcp", healed: true,
			during: toxics("latency-0-0")},
		{kind: "bandwidth", params: "{rate: 1000, stream: upstream}", target: "mcp", healed: true,
			during: toxics("bandwidth-0-0")},
		{kind: "slicer", params: "{average_size: 8, delay: 1ms, for: 60ms}", target: "mcp", healed: true,
			during: toxics("slicer-0-0")},
		{kind: "limit_data", params: "{bytes: 4096, for: 60ms}", target: "mcp", healed: true,
			during: toxics("limit_data-0-0")},
		{kind: "partition", params: "{for: 60ms, mode: blackhole}", target: "mcp", healed: true,
			during: toxics("partition-blackhole-down", "partition-blackhole-up")},
		{kind: "partition", params: "{for: 60ms, mode: refuse}", target: "mcp", healed: true,
			during: func(t *testing.T, f *fixture) { assert.False(t, f.enabled()) },
			after:  func(t *testing.T, f *fixture) { assert.True(t, f.enabled()) }},
		{kind: "http_status", params: "{status: 503, count: 1, for: 60ms}", target: "mcp", healed: true,
			during: toxics("http_status-0-0-answer", "http_status-0-0-gate")},
		{kind: "restart", params: "{role: server, graceful: true}", target: "server",
			after: calls("restart graceful server")},
		{kind: "crash", params: "{role: client}", target: "client",
			after: calls("restart kill client")},
		{kind: "crash", params: "{role: server, replica: 2}", target: "server-2",
			after: calls("restart kill server-2")},
		{kind: "crash", params: "{role: server, replica: 3, down: 60ms}", target: "server-3", healed: true,
			during: calls("kill server-3"), after: calls("kill server-3", "start server-3")},
		{kind: "restart", params: "{role: server, replica: 2, graceful: true}", target: "server-2",
			after: calls("restart graceful server-2")},
		{kind: "pause", params: "{role: server, replica: 2, for: 60ms}", target: "server-2", healed: true,
			during: calls("pause server-2"), after: calls("pause server-2", "resume server-2")},
		{kind: "pause", params: "{role: server, for: 60ms}", target: "server", healed: true,
			during: calls("pause server"), after: calls("pause server", "resume server")},
		{kind: "expire_session", target: "server",
			after: func(t *testing.T, f *fixture) { assert.Equal(t, []string{"POST /control/expire"}, f.controlPosts()) }},
		{kind: "terminate_session", target: "server",
			after: func(t *testing.T, f *fixture) { assert.Equal(t, []string{"POST /control/terminate"}, f.controlPosts()) }},
	}
	for _, tc := range cases {
		t.Run(tc.kind+" "+tc.params, func(t *testing.T) {
			f := newFixture(t, serve(t, echo))
			p := params(t, tc.kind, tc.params)
			spec := faults.Spec{Kind: tc.kind, At: dur.Duration(20 * time.Millisecond), Params: p}
			plan := faults.Plan([]faults.Spec{spec}, 1, 1)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var phases []faults.Phase
			entries, err := f.run(ctx, []faults.Spec{spec}, func(e faults.Event) {
				phases = append(phases, e.Phase)
				assert.Equal(t, tc.kind == "restart" || tc.kind == "crash", e.Stops, "the event says whether the injection stops its target")
				if e.Phase == faults.PhaseInjected {
					if tc.during != nil {
						tc.during(t, f)
					}
					if plan[0].Hold == 0 {
						cancel() // the run's end heals what has no window
					}
				}
			})
			require.NoError(t, err)
			if tc.after != nil {
				tc.after(t, f)
			}
			assert.Empty(t, f.toxicNames(), "every toxic removed after the run")
			assert.True(t, f.enabled())

			require.Len(t, entries, 1)
			e := entries[0]
			assert.Equal(t, tc.kind, e.Kind)
			assert.Equal(t, tc.target, e.Target)
			assert.Empty(t, e.Error)
			assert.NotEmpty(t, e.Detail)
			assert.GreaterOrEqual(t, e.StartUS, (20 * time.Millisecond).Microseconds(), "injected at its time, not before")
			assert.GreaterOrEqual(t, e.EndUS, e.StartUS)
			if plan[0].Hold > 0 {
				assert.GreaterOrEqual(t, e.EndUS-e.StartUS, plan[0].Hold.Microseconds(), "healed after its window")
			}
			want := []faults.Phase{faults.PhaseInjected}
			if tc.healed {
				want = append(want, faults.PhaseHealed)
			}
			assert.Equal(t, want, phases)
		})
	}
}

func toxics(names ...string) func(*testing.T, *fixture) {
	return func(t *testing.T, f *fixture) { assert.Equal(t, names, f.toxicNames()) }
}

func calls(want ...string) func(*testing.T, *fixture) {
	return func(t *testing.T, f *fixture) { assert.Equal(t, want, f.procs.list()) }
}

func TestRunPartitionRefuseRefusesThenHeals(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	conn, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	roundTrip(t, conn, "before")

	spec := faults.Spec{Kind: "partition", Params: params(t, "partition", "{for: 100ms, mode: refuse}")}
	entries, err := f.run(context.Background(), []faults.Spec{spec}, func(e faults.Event) {
		if e.Phase != faults.PhaseInjected {
			return
		}
		assert.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := conn.Read(make([]byte, 1))
		assert.Error(t, err, "the open connection is closed")
		_, err = net.Dial("tcp", f.listen)
		assert.Error(t, err, "new connections are refused")
	})
	require.NoError(t, err)
	require.Len(t, entries, 1)

	healed, err := net.Dial("tcp", f.listen)
	require.NoError(t, err, "the proxy listens again on the same address")
	t.Cleanup(func() { healed.Close() })
	roundTrip(t, healed, "after")
}

func roundTrip(t *testing.T, conn net.Conn, msg string) {
	t.Helper()
	_, err := conn.Write([]byte(msg))
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	got := make([]byte, len(msg))
	_, err = io.ReadFull(conn, got)
	require.NoError(t, err)
	require.Equal(t, msg, string(got))
}

func TestRunPartitionBlackholeStallsThenHealsWithoutLoss(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	conn, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	roundTrip(t, conn, "before")

	payload := make([]byte, 256<<10)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	wrote := make(chan error, 1)
	spec := faults.Spec{Kind: "partition", Params: params(t, "partition", "{for: 150ms, mode: blackhole}")}
	_, err = f.run(context.Background(), []faults.Spec{spec}, func(e faults.Event) {
		if e.Phase != faults.PhaseInjected {
			return
		}
		go func() {
			_, err := conn.Write(payload)
			wrote <- err
		}()
		assert.NoError(t, conn.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
		n, err := conn.Read(make([]byte, 1))
		var ne net.Error
		assert.Zero(t, n, "a byte crossed the blackhole")
		assert.True(t, errors.As(err, &ne) && ne.Timeout(), "want a read timeout, got %v", err)
	})
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	got := make([]byte, len(payload))
	_, err = io.ReadFull(conn, got)
	require.NoError(t, err, "the connection survives the blackhole")
	require.NoError(t, <-wrote)
	require.Equal(t, payload, got, "every byte after the heal, in order")
}

// Two blackhole partitions that overlap hold the connection as one does,
// and heal when the later one ends: each window ends on time, and every
// byte held comes through after the last.
func TestRunOverlappingBlackholesHealWhenTheLastEnds(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	conn, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	roundTrip(t, conn, "before")

	first := faults.Spec{Kind: "partition", Params: params(t, "partition", "{for: 150ms, mode: blackhole}")}
	second := faults.Spec{Kind: "partition", At: dur.Duration(50 * time.Millisecond), Params: params(t, "partition", "{for: 250ms, mode: blackhole}")}
	wrote := make(chan error, 1)
	var once sync.Once
	start := time.Now()
	entries, err := f.run(context.Background(), []faults.Spec{first, second}, func(e faults.Event) {
		if e.Phase == faults.PhaseInjected {
			once.Do(func() {
				go func() {
					_, err := conn.Write([]byte("held"))
					wrote <- err
				}()
			})
		}
	})
	require.NoError(t, err)
	require.Len(t, entries, 2)
	for _, e := range entries {
		window := e.EndUS - e.StartUS
		assert.Less(t, window, (time.Second).Microseconds(), "partition %d ended near its window, not held by the other: %+v", e.Index, e)
	}
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Empty(t, f.toxicNames(), "the stalls are gone once the last partition healed")
	require.NoError(t, <-wrote)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	got := make([]byte, 4)
	_, err = io.ReadFull(conn, got)
	require.NoError(t, err, "the connection survives both")
	assert.Equal(t, "held", string(got))
}

func TestRunOneShotResetClosesOpenConnections(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	conn, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	roundTrip(t, conn, "before")

	spec := faults.Spec{Kind: "reset", Params: params(t, "reset", "{after: 30ms}")}
	entries, err := f.run(context.Background(), []faults.Spec{spec}, nil)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.GreaterOrEqual(t, entries[0].StartUS, (30 * time.Millisecond).Microseconds(), "the reset happens after its delay")

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err, "the connection open at the injection is closed")
	assert.Empty(t, f.toxicNames())

	fresh, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { fresh.Close() })
	roundTrip(t, fresh, "after: new connections pass")
}

func TestRunInjectsAtRunScaleAndLogsParamsAsWritten(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	spec := faults.Spec{Kind: "latency", Params: params(t, "latency", "{latency: 2s, jitter: 1s, for: 5s}")}
	entries, err := f.runPlan(context.Background(), faults.Plan([]faults.Spec{spec}, 0.01, 1), nil)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	e := entries[0]
	assert.Contains(t, e.Detail, "jitter=10 latency=20", "the toxic gets the scaled durations, in ms")
	assert.Equal(t, map[string]any{"latency": "2s", "jitter": "1s", "for": "5s"}, e.Params, "the log keeps the experiment's figures")
	assert.Less(t, e.EndUS-e.StartUS, (2 * time.Second).Microseconds(), "healed after the scaled 50 ms, not 5 s")
}

func TestRunLogsFailuresAndGoesOn(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	f.procs.fail = errors.New("no such agent")
	specs := []faults.Spec{
		{Kind: "crash", Params: params(t, "crash", "{role: server}")},
		{Kind: "no_such_kind"},
		{Kind: "latency", Params: params(t, "latency", "{latency: 5ms, for: 30ms}")},
	}
	var failed []string
	entries, err := f.run(context.Background(), specs, func(e faults.Event) {
		if e.Phase == faults.PhaseFailed {
			failed = append(failed, e.Kind)
		}
	})
	require.ErrorIs(t, err, faults.ErrInjection)
	require.Len(t, entries, 3)
	slices.SortFunc(entries, func(a, b faults.Entry) int { return a.Index - b.Index })
	assert.Contains(t, entries[0].Error, "no such agent")
	assert.Contains(t, entries[1].Error, "unknown fault kind")
	assert.Empty(t, entries[2].Error, "the others still run")
	assert.ElementsMatch(t, []string{"crash", "no_such_kind"}, failed)
}

func TestRunNeedsItsHandles(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	f.procs = nil
	log, err := faults.CreateLog(f.logPath)
	require.NoError(t, err)
	t.Cleanup(func() { log.Close() })
	env := faults.Env{Clock: f.clock, Log: log}
	plan := faults.Plan([]faults.Spec{
		{Kind: "crash", Params: params(t, "crash", "{role: server}")},
		{Kind: "expire_session"},
		{Kind: "latency", Params: params(t, "latency", "{latency: 5ms}")},
	}, 1, 1)
	err = faults.Run(context.Background(), env, plan)
	require.ErrorIs(t, err, faults.ErrInjection)
	assert.ErrorContains(t, err, "no process control")
	assert.ErrorContains(t, err, "no server control URL")
	assert.ErrorContains(t, err, "no Toxiproxy proxy")

	require.Error(t, faults.Run(context.Background(), faults.Env{}, plan), "a run needs a log")
}

func TestRunSkipsInjectionsAfterItsEnd(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	entries, err := f.run(ctx, []faults.Spec{{Kind: "crash", At: dur.Duration(time.Hour), Params: params(t, "crash", "{role: server}")}}, nil)
	require.NoError(t, err)
	assert.Empty(t, entries)
	assert.Empty(t, f.procs.list())

	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	entries, err = f.run(ctx, []faults.Spec{{Kind: "reset", Params: params(t, "reset", "{after: 1h}")}}, nil)
	require.NoError(t, err, "a reset due after the run's end is not injected")
	assert.Empty(t, entries)
	assert.Empty(t, f.toxicNames())
}

// TestRunIdleTimeoutCloseAsSeenByGoClient drives the incident's fault
// through Run and reads an SSE body with Go's HTTP client, as the MCP
// clients do. The idle timer starts when the connection opens, so idle is
// long enough for the first event to arrive even on a loaded machine.
func TestRunIdleTimeoutCloseAsSeenByGoClient(t *testing.T) {
	cases := []struct {
		close string
		want  error
	}{
		{close: "fin", want: io.ErrUnexpectedEOF},
		{close: "reset", want: syscall.ECONNRESET},
	}
	for _, tc := range cases {
		t.Run(tc.close, func(t *testing.T) {
			done := make(chan struct{})
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "id: 1\ndata: {}\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
				case <-done:
				}
			}))
			t.Cleanup(backend.Close)
			t.Cleanup(func() { close(done) })
			f := newFixture(t, backend.Listener.Addr().String())

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			injected := make(chan struct{})
			spec := faults.Spec{Kind: "idle_timeout", Params: params(t, "idle_timeout", "{idle: 250ms, close: "+tc.close+"}")}
			ran := make(chan error, 1)
			go func() {
				_, err := f.run(ctx, []faults.Spec{spec}, func(e faults.Event) {
					if e.Phase == faults.PhaseInjected {
						close(injected)
					}
				})
				ran <- err
			}()
			<-injected

			client := &http.Client{Transport: &http.Transport{}}
			resp, err := client.Get("http://" + f.listen + "/mcp")
			require.NoError(t, err)
			t.Cleanup(func() { resp.Body.Close() })
			body := bufio.NewReader(resp.Body)
			line, err := body.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "id: 1\n", line)
			_, err = io.ReadAll(body)
			assert.True(t, errors.Is(err, tc.want), "close: %s: the client saw %v, want %v", tc.close, err, tc.want)

			cancel()
			require.NoError(t, <-ran)
			assert.Empty(t, f.toxicNames(), "the idle timeout and the linger marker are gone")
		})
	}
}

// blockingRestart is a Processes whose Restart waits to be released, and
// reports whether the context it was given had ended by then.
type blockingRestart struct {
	fakeProcesses
	started, release chan struct{}
	ctxEnded         chan bool
}

func (p *blockingRestart) Restart(ctx context.Context, _ string, _ bool) error {
	close(p.started)
	<-p.release
	p.ctxEnded <- ctx.Err() != nil
	return ctx.Err()
}

func TestRunLetsAnInjectionUnderWayFinishAfterTheRunEnds(t *testing.T) {
	log := faults.NewLog(io.Discard)
	procs := &blockingRestart{started: make(chan struct{}), release: make(chan struct{}), ctxEnded: make(chan bool, 1)}
	env := faults.Env{Clock: runclock.Start(), Log: log, Processes: procs}
	plan := faults.Plan([]faults.Spec{{Kind: "restart", Params: params(t, "restart", "{role: server, graceful: true}")}}, 1, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- faults.Run(ctx, env, plan) }()
	<-procs.started
	cancel() // the workload ends while the server is being restarted
	close(procs.release)
	assert.False(t, <-procs.ctxEnded, "the restart is not cut off between its stop and its start")
	require.NoError(t, <-done)
}

func TestRunLogsAHealThatFailedAsAnInjection(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	injected := make(chan struct{})
	progress := func(ev faults.Event) {
		if ev.Phase == faults.PhaseInjected {
			close(injected)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-injected
		p, err := f.toxi.Proxy("mcp")
		assert.NoError(t, err)
		assert.NoError(t, p.Delete()) // the toxic goes with it: the heal cannot remove it
		cancel()
	}()
	entries, err := f.run(ctx, []faults.Spec{{Kind: "latency", Params: params(t, "latency", "{latency: 5ms}")}}, progress)
	require.ErrorIs(t, err, faults.ErrInjection)
	require.Len(t, entries, 1)
	assert.Empty(t, entries[0].Error, "the fault did act")
	assert.Contains(t, entries[0].HealError, "heal:")
}

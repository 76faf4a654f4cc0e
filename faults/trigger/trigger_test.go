package trigger

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
)

// recorder collects firings and lets a test wait for one.
type recorder struct {
	mu  sync.Mutex
	got []Firing
	ch  chan Firing
}

func newRecorder() *recorder { return &recorder{ch: make(chan Firing, 64)} }

func (r *recorder) fire(f Firing) {
	r.mu.Lock()
	r.got = append(r.got, f)
	r.mu.Unlock()
	r.ch <- f
}

func (r *recorder) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, f := range r.got {
		out = append(out, f.ID)
	}
	return out
}

// wireLog numbers records like the proxy agent's sink does.
type wireLog struct{ n int64 }

func (l *wireLog) rec(r wire.Record) *wire.Record {
	l.n++
	r.N = l.n
	if r.Edge == "" {
		r.Edge = wire.EdgeServer
	}
	return &r
}

func call(id, tool string) []wire.Message {
	return []wire.Message{{ID: id, Method: "tools/call", Tool: tool}}
}

func TestEngineFiresOnEvents(t *testing.T) {
	heal0 := 0
	tests := []struct {
		name string
		arm  Trigger
		feed func(e *Engine, l *wireLog)
		want []string // ids fired
	}{
		{"tools_call fires on the request", Trigger{ID: "a", Event: EventToolsCall}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
		}, []string{"a"}},
		{"tools_call of another tool does not", Trigger{ID: "a", Event: EventToolsCall, Tool: "chatty"}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
		}, nil},
		{"tools_call on the other edge does not", Trigger{ID: "a", Event: EventToolsCall, Edge: wire.EdgeClient}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
		}, nil},
		{"the nth call", Trigger{ID: "a", Event: EventToolsCall, Nth: 2}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 2, Exchange: 1, Method: "POST", Messages: call("3", "charge")}))
		}, []string{"a"}},
		{"initialize", Trigger{ID: "a", Event: EventInitialize}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: []wire.Message{{ID: "1", Method: "initialize"}}}))
		}, []string{"a"}},
		{"discover is not initialize", Trigger{ID: "a", Event: EventInitialize}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: []wire.Message{{ID: "1", Method: "server/discover"}}}))
		}, nil},
		{"discover", Trigger{ID: "a", Event: EventDiscover}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: []wire.Message{{ID: "1", Method: "server/discover"}}}))
		}, []string{"a"}},
		{"resume needs Last-Event-ID", Trigger{ID: "a", Event: EventResume}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "GET", Header: &wire.Header{SessionID: "s"}}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 2, Exchange: 1, Method: "GET", Header: &wire.Header{SessionID: "s", LastEventID: "7"}}))
		}, []string{"a"}},
		{"the nth SSE event of one call", Trigger{ID: "a", Event: EventSSEEvent, Nth: 2, Tool: "chatty"}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "chatty")}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 2, Exchange: 1, Method: "POST", Messages: call("3", "chatty")}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 1, Exchange: 1, EventID: "1", Priming: true}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 1, Exchange: 1, EventID: "2", Messages: []wire.Message{{Method: "notifications/progress"}}}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 2, Exchange: 1, EventID: "3", Messages: []wire.Message{{Method: "notifications/progress"}}}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 2, Exchange: 1, EventID: "4", Messages: []wire.Message{{Method: "notifications/progress"}}}))
		}, []string{"a"}},
		{"one event each of two calls is not the second of one", Trigger{ID: "a", Event: EventSSEEvent, Nth: 2}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "chatty")}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 2, Exchange: 1, Method: "POST", Messages: call("3", "chatty")}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 1, Exchange: 1, EventID: "2", Messages: []wire.Message{{Method: "notifications/progress"}}}))
			e.Observe(l.rec(wire.Record{Kind: wire.KindEvent, Conn: 2, Exchange: 1, EventID: "3", Messages: []wire.Message{{Method: "notifications/progress"}}}))
		}, nil},
		{"request after a heal", Trigger{ID: "a", Event: EventRequest, AfterHeal: &heal0}, func(e *Engine, l *wireLog) {
			e.Observe(l.rec(wire.Record{TUS: 5, Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "GET"}))
			e.Healed(0, 10)
			e.Observe(l.rec(wire.Record{TUS: 11, Kind: wire.KindRequest, Conn: 1, Exchange: 2, Method: "GET"}))
		}, []string{"a"}},
		{"no request after the heal", Trigger{ID: "a", Event: EventRequest, AfterHeal: &heal0}, func(e *Engine, l *wireLog) {
			e.Healed(0, 10)
			e.Observe(l.rec(wire.Record{TUS: 9, Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "GET"}))
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder()
			e := NewEngine(runclock.Start(), rec.fire)
			require.NoError(t, e.Arm(tc.arm))
			tc.feed(e, &wireLog{})
			assert.Equal(t, tc.want, rec.ids())
			e.Close()
		})
	}
}

func TestEngineCallInFlight(t *testing.T) {
	const after = 30 * time.Millisecond
	rec := newRecorder()
	e := NewEngine(runclock.Start(), rec.fire)
	t.Cleanup(e.Close)
	require.NoError(t, e.Arm(Trigger{ID: "long", Event: EventToolsCall, Tool: "charge", After: after}))
	l := &wireLog{}
	// The first charge is answered before the time passes: it does not fire.
	e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
	e.Observe(l.rec(wire.Record{Kind: wire.KindResponse, Conn: 1, Exchange: 1, Status: 200, Header: &wire.Header{ContentType: "application/json"}}))
	// The second stays in flight on an SSE stream with only progress.
	e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 2, Exchange: 1, Method: "POST", Messages: call("3", "charge")}))
	e.Observe(l.rec(wire.Record{Kind: wire.KindResponse, Conn: 2, Exchange: 1, Status: 200, Header: &wire.Header{ContentType: "text/event-stream"}}))
	select {
	case f := <-rec.ch:
		assert.Equal(t, "long", f.ID)
		assert.Equal(t, int64(3), f.WireN, "the firing names the request of the call still in flight")
		assert.Contains(t, f.Detail, "in flight for 30ms")
		assert.Empty(t, f.Err)
	case <-time.After(5 * time.Second):
		t.Fatal("the trigger did not fire for the call in flight")
	}
	assert.Equal(t, []string{"long"}, rec.ids(), "the answered call did not fire it, and it fires once")
}

func TestEngineCallAnsweredBeforeItsRequestWasRecordedDoesNotFire(t *testing.T) {
	rec := newRecorder()
	e := NewEngine(runclock.Start(), rec.fire)
	require.NoError(t, e.Arm(Trigger{ID: "x", Event: EventToolsCall, After: 20 * time.Millisecond}))
	l := &wireLog{}
	// A loaded observer recorded the JSON answer before the request it answers.
	e.Observe(l.rec(wire.Record{Kind: wire.KindResponse, Conn: 1, Exchange: 1, Status: 200, Header: &wire.Header{ContentType: "application/json"}}))
	e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
	time.Sleep(60 * time.Millisecond)
	e.Close()
	f := <-rec.ch
	assert.Equal(t, ErrClosed.Error(), f.Err, "a call already answered is not in flight")
}

func TestEngineCallEndedByCloseDoesNotFire(t *testing.T) {
	rec := newRecorder()
	e := NewEngine(runclock.Start(), rec.fire)
	require.NoError(t, e.Arm(Trigger{ID: "x", Event: EventToolsCall, After: 20 * time.Millisecond}))
	l := &wireLog{}
	e.Observe(l.rec(wire.Record{Kind: wire.KindRequest, Conn: 1, Exchange: 1, Method: "POST", Messages: call("2", "charge")}))
	e.Observe(l.rec(wire.Record{Kind: wire.KindClose, Conn: 1, End: wire.EndRST, By: wire.SideServer}))
	time.Sleep(60 * time.Millisecond)
	e.Close()
	f := <-rec.ch
	assert.Equal(t, ErrClosed.Error(), f.Err, "only Close ends a trigger whose call was cut before its time")
}

func TestEngineCloseReportsUnfired(t *testing.T) {
	rec := newRecorder()
	e := NewEngine(runclock.Start(), rec.fire)
	require.NoError(t, e.Arm(Trigger{ID: "a", Event: EventResume}))
	e.Close()
	e.Close()
	require.Len(t, rec.got, 1)
	assert.Equal(t, ErrClosed.Error(), rec.got[0].Err)
	assert.ErrorIs(t, e.Arm(Trigger{ID: "b", Event: EventResume}), ErrClosed)
}

func TestWhenValidate(t *testing.T) {
	one, self, far := 1, 0, 5
	tests := []struct {
		name string
		w    When
		want string // "" for valid
	}{
		{"tools_call after", When{Event: EventToolsCall, Tool: "charge", After: dur.Duration(30 * time.Second)}, ""},
		{"request after heal", When{Event: EventRequest, AfterHeal: &one}, ""},
		{"unknown event", When{Event: "soon"}, "event: must be one of"},
		{"bad edge", When{Event: EventResume, Edge: "middle"}, "edge: must be server or client"},
		{"negative nth", When{Event: EventResume, Nth: -1}, "nth: must be 1 or more"},
		{"tool on resume", When{Event: EventResume, Tool: "charge"}, "tool: only tools_call and sse_event"},
		{"after on initialize", When{Event: EventInitialize, After: dur.Duration(time.Second)}, "after: only tools_call"},
		{"after_heal on resume", When{Event: EventResume, AfterHeal: &one}, "after_heal: only the request event"},
		{"after_heal out of range", When{Event: EventRequest, AfterHeal: &far}, "after_heal: must be the index of a fault"},
		{"after_heal of itself", When{Event: EventRequest, AfterHeal: &self}, "cannot wait for its own heal"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.w.Validate(0, 2)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestScaled(t *testing.T) {
	tr := When{Event: EventToolsCall, Tool: "charge", After: dur.Duration(30 * time.Second)}.Scaled("f0", 0.1)
	assert.Equal(t, Trigger{ID: "f0", Event: EventToolsCall, Tool: "charge", After: 3 * time.Second, Nth: 1, Edge: wire.EdgeServer}, tr)
	assert.Equal(t, "tools_call charge in flight 3s at the server edge", tr.String())
}

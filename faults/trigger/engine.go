package trigger

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ErrClosed is the error of a firing the engine gave up on.
var ErrClosed = errors.New("trigger engine closed")

// Engine evaluates armed triggers on the wire records of both edges. Arm
// and Observe may be called from any goroutine. Fire is called once per
// trigger, outside the engine's lock, in the order triggers fire.
type Engine struct {
	clock runclock.Clock
	fire  func(Firing)

	mu    sync.Mutex
	armed []*armed
	// exchanges pairs the records into exchanges, forgetting each once it
	// is done and its request was seen (an answer can be recorded before
	// its request: such a call is over when its request arrives); calls
	// are the tools/call exchanges among them.
	exchanges wire.Exchanges
	calls     map[wire.ExchangeKey]*inflight
	healed    map[int]int64 // fault index to when it healed
	timers    []*time.Timer
	closed    bool
}

type armed struct {
	t     Trigger
	hits  int
	fired bool
}

// inflight is a tools/call exchange on one edge, from its request to its
// final response.
type inflight struct {
	x        *wire.Exchange
	tool     string
	events   int  // SSE events with a message so far
	answered bool // an event carried a response
}

// over reports whether the call got its final response: an event carried
// one, or the exchange is done.
func (c *inflight) over() bool { return c.answered || c.x.Done() }

// NewEngine returns an engine that times firings on clock and reports them
// to fire.
func NewEngine(clock runclock.Clock, fire func(Firing)) *Engine {
	return &Engine{clock: clock, fire: fire, calls: map[wire.ExchangeKey]*inflight{}, healed: map[int]int64{}}
}

// Arm adds a trigger. It evaluates what is observed from now on.
func (e *Engine) Arm(t Trigger) error {
	if !slices.Contains(Events, t.Event) {
		return fmt.Errorf("arm %s: unknown event %q", t.ID, t.Event)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrClosed
	}
	if t.Edge == "" {
		t.Edge = wire.EdgeServer
	}
	t.Nth = max(t.Nth, 1)
	e.armed = append(e.armed, &armed{t: t})
	return nil
}

// Healed tells the engine that the experiment's fault index healed at atUS
// on the run's clock, for the request triggers waiting for it.
func (e *Engine) Healed(index int, atUS int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, seen := e.healed[index]; !seen {
		e.healed[index] = atUS
	}
}

// Close stops the timers and fires every trigger that has not fired with
// [ErrClosed]. It is idempotent.
func (e *Engine) Close() {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	for _, t := range e.timers {
		t.Stop()
	}
	var out []Firing
	for _, a := range e.armed {
		if !a.fired {
			a.fired = true
			out = append(out, Firing{ID: a.t.ID, AtUS: e.clock.Micros(), Err: ErrClosed.Error()})
		}
	}
	e.mu.Unlock()
	e.report(out)
}

// Observe evaluates one wire record.
func (e *Engine) Observe(r *wire.Record) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	var out []Firing
	x := e.exchanges.Observe(r)
	switch r.Kind {
	case wire.KindRequest:
		out = e.request(r, x)
	case wire.KindEvent:
		out = e.event(r, x)
	case wire.KindClose:
		// The close ended the calls of its connection.
		for k, c := range e.calls {
			if c.x.Done() {
				delete(e.calls, k)
			}
		}
	}
	if x != nil && x.Requested && x.Done() {
		e.exchanges.Forget(x)
		delete(e.calls, x.Key)
	}
	e.mu.Unlock()
	e.report(out)
}

func (e *Engine) report(out []Firing) {
	for _, f := range out {
		e.fire(f)
	}
}

// request evaluates a request record of exchange x; the lock is held.
func (e *Engine) request(r *wire.Record, x *wire.Exchange) []Firing {
	var out []Firing
	var call *wire.Message
	for i := range r.Messages {
		if m := &r.Messages[i]; m.Method == mcp.MethodToolsCall && m.IsRequest() {
			call = m
		}
	}
	if call != nil && x != nil {
		c := &inflight{x: x, tool: call.Tool}
		e.calls[x.Key] = c
		e.watchCall(r, c, &out)
	}
	for _, a := range e.armed {
		if a.fired || a.t.Edge != r.Edge {
			continue
		}
		if what, ok := e.requestMatches(a.t, r); ok {
			e.hit(a, r.N, what, &out)
		}
	}
	return out
}

// requestMatches reports whether a request record is an occurrence of the
// trigger's event, and describes it; tools_call is handled by watchCall.
func (e *Engine) requestMatches(t Trigger, r *wire.Record) (string, bool) {
	switch t.Event {
	case EventResume:
		if r.Method == http.MethodGet && r.Header != nil && r.Header.LastEventID != "" {
			return "GET with Last-Event-ID " + r.Header.LastEventID, true
		}
	case EventInitialize, EventDiscover:
		method := mcp.MethodInitialize
		if t.Event == EventDiscover {
			method = mcp.MethodDiscover
		}
		for _, m := range r.Messages {
			if m.Method == method && m.IsRequest() {
				return method + " request", true
			}
		}
	case EventRequest:
		if t.AfterHeal == nil {
			return r.Method + " " + r.Path, true
		}
		if at, ok := e.healed[*t.AfterHeal]; ok && r.TUS >= at {
			return fmt.Sprintf("%s %s, the first after fault %d healed", r.Method, r.Path, *t.AfterHeal), true
		}
	}
	return "", false
}

// watchCall evaluates the tools_call triggers on a new call: at once when
// they wait for no time, else once their time in flight has passed.
func (e *Engine) watchCall(r *wire.Record, c *inflight, out *[]Firing) {
	for _, a := range e.armed {
		t := a.t
		if a.fired || t.Event != EventToolsCall || t.Edge != r.Edge || (t.Tool != "" && t.Tool != c.tool) {
			continue
		}
		if t.After <= 0 {
			e.hit(a, r.N, "tools/call "+c.tool, out)
			continue
		}
		e.timers = append(e.timers, time.AfterFunc(t.After, func() {
			e.mu.Lock()
			var later []Firing
			if !e.closed && !c.over() {
				e.hit(a, c.x.N, fmt.Sprintf("tools/call %s in flight for %s", c.tool, t.After), &later)
			}
			e.mu.Unlock()
			e.report(later)
		}))
	}
}

// event evaluates an SSE event record of exchange x; the lock is held.
func (e *Engine) event(r *wire.Record, x *wire.Exchange) []Firing {
	if x == nil || len(r.Messages) == 0 {
		return nil
	}
	c := e.calls[x.Key]
	if c == nil {
		return nil
	}
	c.events++
	if slices.ContainsFunc(r.Messages, func(m wire.Message) bool { return m.Response }) {
		c.answered = true
	}
	var out []Firing
	for _, a := range e.armed {
		t := a.t
		if a.fired || t.Event != EventSSEEvent || t.Edge != r.Edge || (t.Tool != "" && t.Tool != c.tool) || c.events != t.Nth {
			continue
		}
		// The nth event of one call fires at once: nth counts events, not calls.
		a.hits = t.Nth - 1
		e.hit(a, r.N, fmt.Sprintf("SSE event %d (id %q) of tools/call %s", c.events, r.EventID, c.tool), &out)
	}
	return out
}

// hit counts one occurrence of a's event and fires a at its nth; the lock
// is held.
func (e *Engine) hit(a *armed, n int64, what string, out *[]Firing) {
	if a.fired {
		return
	}
	a.hits++
	if a.hits < a.t.Nth {
		return
	}
	a.fired = true
	*out = append(*out, Firing{ID: a.t.ID, AtUS: e.clock.Micros(), WireN: n,
		Detail: fmt.Sprintf("%s (wire record %d)", what, n)})
}

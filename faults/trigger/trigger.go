// Package trigger fires faults on what the wire shows instead of at a time:
// a fault written `when: {event: tools_call, tool: charge, after: 30s}` is
// injected once a charge has been in flight for 30 s at the server edge,
// however long the client took to get there. On a loaded machine a fault
// planned at a fixed time can land before the client has even initialized;
// a trigger waits for the protocol.
//
// An [Engine] runs inside the proxy agent, next to the wire observer: it
// reads the observer's records as they are made (no polling across
// processes) and calls back once per armed [Trigger] when it fires. The
// runner arms triggers and hears of firings through the proxy agent's API
// (package faults/proxy).
//
// # Events
//
//	tools_call  a tools/call request passed the edge (only of tool, when
//	            given); with after, once such a call has been in flight for
//	            that long: no final response on its exchange, its connection
//	            still open
//	sse_event   the nth SSE event carrying a message on the response stream
//	            of a tools/call (only of tool, when given); priming events
//	            and comments do not count
//	resume      a GET carrying Last-Event-ID passed the edge
//	initialize  an initialize request passed the edge
//	discover    a server/discover request passed the edge
//	request     any HTTP request passed the edge; with after_heal, the first
//	            one after fault after_heal of the experiment was healed
//
// Every event may carry nth (default 1: the first occurrence fires) and edge
// (server, the default: what reached or left the server; client: what the
// client sent or was delivered). A trigger fires at most once; a fault's
// repeat counts from the firing.
package trigger

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/wire"
)

// Event names, as written in experiment files.
const (
	EventToolsCall  = "tools_call"
	EventSSEEvent   = "sse_event"
	EventResume     = "resume"
	EventInitialize = "initialize"
	EventDiscover   = "discover"
	EventRequest    = "request"
)

// Events lists every event a trigger can wait for.
var Events = []string{EventToolsCall, EventSSEEvent, EventResume, EventInitialize, EventDiscover, EventRequest}

// When is a fault's `when:` block as an experiment states it, at real-world
// scale. Its fields are the wire schema of the YAML block.
type When struct {
	Event string       `yaml:"event" json:"event"`
	Tool  string       `yaml:"tool" json:"tool,omitempty"`
	After dur.Duration `yaml:"after" json:"after,omitempty"`
	Nth   int          `yaml:"nth" json:"nth,omitempty"`
	Edge  string       `yaml:"edge" json:"edge,omitempty"`
	// AfterHeal is the index, in the experiment's faults list, of the fault
	// whose heal the request waits for.
	AfterHeal *int `yaml:"after_heal" json:"after_heal,omitempty"`
}

// Validate checks the block; faults is the length of the experiment's faults
// list and self the index of the fault the block belongs to. A problem is a
// *field.Error naming the offending field.
func (w When) Validate(self, faults int) error {
	if !slices.Contains(Events, w.Event) {
		return field.Errorf("event", "must be one of %s, got %q", strings.Join(Events, ", "), w.Event)
	}
	if w.Edge != "" && w.Edge != string(wire.EdgeServer) && w.Edge != string(wire.EdgeClient) {
		return field.Errorf("edge", "must be server or client, got %q", w.Edge)
	}
	if w.Nth < 0 {
		return field.Errorf("nth", "must be 1 or more (default 1)")
	}
	if w.Tool != "" && w.Event != EventToolsCall && w.Event != EventSSEEvent {
		return field.Errorf("tool", "only tools_call and sse_event look at a tool, not %s", w.Event)
	}
	if w.After != 0 && w.Event != EventToolsCall {
		return field.Errorf("after", "only tools_call waits for a call in flight, not %s", w.Event)
	}
	if w.AfterHeal != nil {
		switch i := *w.AfterHeal; {
		case w.Event != EventRequest:
			return field.Errorf("after_heal", "only the request event waits for a heal, not %s", w.Event)
		case i < 0 || i >= faults:
			return field.Errorf("after_heal", "must be the index of a fault in this experiment (0 to %d), got %d", faults-1, i)
		case i == self:
			return field.Errorf("after_heal", "a fault cannot wait for its own heal")
		}
	}
	return nil
}

// Trigger is a When at run scale, as the proxy agent arms it. ID names it in
// firings; the runner makes it unique per injection it gates.
type Trigger struct {
	ID        string        `json:"id"`
	Event     string        `json:"event"`
	Tool      string        `json:"tool,omitempty"`
	After     time.Duration `json:"after,omitempty"`
	Nth       int           `json:"nth,omitempty"`
	Edge      wire.Edge     `json:"edge,omitempty"`
	AfterHeal *int          `json:"after_heal,omitempty"`
}

// Scaled returns w at run scale, as trigger id.
func (w When) Scaled(id string, scale float64) Trigger {
	edge := wire.Edge(w.Edge)
	if edge == "" {
		edge = wire.EdgeServer
	}
	return Trigger{ID: id, Event: w.Event, Tool: w.Tool, After: w.After.Scale(scale), Nth: max(w.Nth, 1), Edge: edge, AfterHeal: w.AfterHeal}
}

// String describes the trigger the way faults.jsonl and progress lines say
// what fired a fault.
func (t Trigger) String() string {
	s := t.Event
	if t.Tool != "" {
		s += " " + t.Tool
	}
	if t.After > 0 {
		s += fmt.Sprintf(" in flight %s", t.After)
	}
	if t.Nth > 1 {
		s += fmt.Sprintf(" #%d", t.Nth)
	}
	if t.AfterHeal != nil {
		s += fmt.Sprintf(" after fault %d healed", *t.AfterHeal)
	}
	return s + " at the " + string(t.Edge) + " edge"
}

// Firing says that a trigger fired: when, on the run's clock, and the wire
// record that made it fire (its line in wire.jsonl, and what it was).
type Firing struct {
	ID     string `json:"id"`
	AtUS   int64  `json:"at_us"`
	WireN  int64  `json:"wire_n"`
	Detail string `json:"detail"`
	// Err is set when the trigger can no longer fire (the engine closed).
	Err string `json:"error,omitempty"`
}

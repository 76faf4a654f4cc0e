package faults

import (
	"encoding/json"
	"strings"
)

// KindBalancer is the fault log's kind for a balancer's own timeouts: not
// an injection, but a standing condition the runner logs for the whole
// workload (a balancer cuts idle streams as the idle_timeout toxic would).
const KindBalancer = "balancer"

// Effect is what a logged injection did, as whoever reads the fault log
// (the checker) needs it, said by the fault's params (the interfaces of
// needs.go) rather than by its kind's name.
type Effect struct {
	// Process is the process a process fault acted on (server, server-2,
	// client, ...); "" for any other.
	Process string
	// Stops: it ended the process, and the calls it ran, before starting
	// it again; Kills: at once (SIGKILL); Freezes: it froze it a while.
	Stops, Kills, Freezes bool
	// Answers: it answered requests in the server's place, or changed
	// what the server answers (an http_status, a control action, a server
	// stopped, a balancer).
	Answers bool
	// Cuts: it may have kept a client's request from crossing whole.
	Cuts bool
	// Fronts: a balancer stood between the proxy and the server, so a
	// connection of the proxy's outlives any one server process.
	Fronts bool
}

// Server reports whether the effect's process is the server or one of
// its replicas.
func (e Effect) Server() bool {
	return e.Process == "server" || strings.HasPrefix(e.Process, "server-")
}

// EffectOf is what a fault log entry did, read from its kind's params (as
// logged), so that logs written before any field of Effect existed read
// the same. An entry whose injection failed did nothing; an unknown kind
// is said to have done nothing the reader could count on.
func EffectOf(e Entry) Effect {
	if e.Error != "" {
		return Effect{}
	}
	if e.Kind == KindBalancer {
		return Effect{Answers: true, Fronts: true}
	}
	p, err := NewParams(e.Kind)
	if err != nil {
		return Effect{}
	}
	if b, err := json.Marshal(e.Params); err == nil {
		_ = json.Unmarshal(b, p) // the params as logged; defaults where absent
	}
	var out Effect
	if t, ok := p.(Targeted); ok {
		tg := t.Target()
		out.Process, out.Stops, out.Kills, out.Freezes = e.Target, tg.Stops, tg.Kills, tg.Freezes
		out.Answers = tg.Stops && out.Server()
		out.Cuts = tg.Stops && out.Server()
	}
	if _, ok := p.(Controlled); ok {
		out.Answers = true
	}
	if a, ok := p.(Answering); ok && a.AnswersForTheServer() {
		out.Answers = true
	}
	if c, ok := p.(Cutting); ok && c.CutsRequests() {
		out.Cuts = true
	}
	return out
}

package check

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The events of a call as the server edge carried them.
//
// An event is what the server sent on a call's stream: every
// notifications/progress counts as one, whatever its progress number says
// (a tool may count 10, 20, 30, bytes, or fractions). Its identity is its
// event id where it has one (a replay of the same id after a resume is the
// same event, sent again), else its place among the stream's events without
// one: such a stream cannot be resumed, so it is carried by one connection
// in order. Its seq, by which accounts place it, is its id's number where
// the stream's events carry numeric ids, else that place; [eventKeys]
// places the events of a client's history the same way, so the two meet.
//
// The edge carries every event the server emitted on a stream when the
// stream ran on one connection from its request to its result. When it
// broke first (a reset, a partition, a restart), the server may have
// emitted events while nothing carried the stream: those are seen only
// when a resume replays them. Event ids prove what was emitted meanwhile
// only when they are dense (each event carried in a row on one connection
// has the id after the one before it), and belong to this stream: either
// they say so (the ids of this stream share a prefix no other stream of the
// session uses, as "STREAM_7") or the session had no other stream that
// could have taken them while this one was away. Then a resume that starts
// past the last id carried before the break proves the ids between were
// emitted and never carried, and they are derived as events: lost, when the
// client went on past them. Ids prove no more than that: they number what
// the server kept for a resume, and a server may emit events it never
// numbers (mcp-go queues a call's notifications while no stream carries it
// and refuses them once the queue is full, before they get an id). So the
// sight of a stream that broke before its result is always partial: its
// emitted count is a lower bound, and when the ids prove no loss, whether
// events were lost silently across the break cannot be told if the client
// went on to receive more of it.

// edgeEvent is one SSE event of a call's stream as the server edge carried
// it.
type edgeEvent struct {
	n, tus   int64
	x        wire.ExchangeKey
	raw      string // the id as sent; "" for none
	num      int64  // its number (mcp.EventNumber); 0 for none
	progress bool   // a notifications/progress
}

// eventLog gathers the events of every call stream of the server edge, and
// the exchanges of each session: when one started (its request) and ended
// (its stream's end, or its connection's close), and whether it was an
// event stream, as wire.Exchanges pairs them.
type eventLog struct {
	streams   map[StreamKey][]edgeEvent
	exchanges map[wire.ExchangeKey]*exchange
	bySession map[string][]wire.ExchangeKey
}

func newEventLog() *eventLog {
	return &eventLog{streams: map[StreamKey][]edgeEvent{}, exchanges: map[wire.ExchangeKey]*exchange{}, bySession: map[string][]wire.ExchangeKey{}}
}

func (l *eventLog) request(x *exchange) {
	l.exchanges[x.Key] = x
	l.bySession[x.session] = append(l.bySession[x.session], x.Key)
}

func (l *eventLog) progress(key StreamKey, k wire.ExchangeKey, r *wire.Record) {
	l.streams[key] = append(l.streams[key], edgeEvent{n: r.N, tus: r.TUS, x: k, raw: r.EventID, num: mcp.EventNumber(r.EventID), progress: true})
}

// other keeps an event with an id that is not a progress notification
// (a priming event, a result, a log message): its id counts in telling
// whether the stream's ids are dense.
func (l *eventLog) other(key StreamKey, k wire.ExchangeKey, r *wire.Record) {
	if r.EventID == "" || key.RequestID == "" {
		return
	}
	l.streams[key] = append(l.streams[key], edgeEvent{n: r.N, tus: r.TUS, x: k, raw: r.EventID, num: mcp.EventNumber(r.EventID)})
}

// carried is how many progress events of a stream the edge carried.
func (l *eventLog) carried(key StreamKey) int {
	n := 0
	for _, e := range l.streams[key] {
		if e.progress {
			n++
		}
	}
	return n
}

// streamSight is what the edge saw of the events of one call stream.
type streamSight struct {
	// Partial says why the edge may not have carried every event the
	// server emitted on the stream; "" when it did.
	Partial string
	// BrokeUS is when the stream first stopped being carried before its
	// result (0: it never did), and BrokeN the wire record of that end.
	BrokeUS int64
	BrokeN  int64
}

// eventKeys places a client's events of one stream as the server edge's
// accounting placed the server's (see the top of this file).
type eventKeys struct {
	numbered bool
}

// place returns a copy of hist whose progress events have the seq the
// server edge's accounting gives them, for the streams it keyed: the event
// id's number on a numbered stream, else the event's place among the
// stream's events. Events of streams the edge never carried keep theirs.
func place(hist []history.Record, keys map[StreamKey]*eventKeys) []history.Record {
	out := slices.Clone(hist)
	count := map[StreamKey]int64{}
	for i := range out {
		h := &out[i]
		if h.Kind != history.KindEvent || h.Detail != mcp.MethodProgress {
			continue
		}
		key := StreamKey{Session: h.Session, RequestID: h.RequestID}
		k := keys[key]
		if k == nil {
			continue
		}
		if k.numbered {
			h.Seq = h.EventID
			continue
		}
		count[key]++
		h.Seq = count[key]
	}
	return out
}

// settleEvents derives the event_emitted records of call c, and what the
// edge saw of its stream: also of a stream that carried no event, since a
// server may have emitted some while nothing carried it.
func (d *derivedLedger) settleEvents(c *wireCall) {
	evs := d.events.streams[c.key]
	numbered, any := true, false
	for _, e := range evs {
		if e.progress {
			any = true
			numbered = numbered && e.num > 0
		}
	}
	if any {
		d.out.keys[c.key] = &eventKeys{numbered: numbered}
	}
	seen := map[string]bool{}
	place := int64(0)
	for _, e := range evs {
		if !e.progress || e.raw != "" && seen[e.raw] {
			continue // a replay of an event already carried
		}
		seen[e.raw] = e.raw != ""
		place++
		seq := place
		if numbered {
			seq = e.num
		}
		d.add(&wire.Record{N: e.n, TUS: e.tus}, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: c.key.Session,
			Client: c.client, RequestID: c.key.RequestID, Tool: c.tool, Stream: d.events.label(e.x), EventID: e.num, Seq: seq})
	}
	if sight := d.sight(c, evs, any, numbered); any || sight.Partial != "" {
		d.out.sight[c.key] = sight
	}
}

// label names the kind of stream an exchange is, as ledger records do.
func (l *eventLog) label(k wire.ExchangeKey) string {
	if x := l.exchanges[k]; x != nil {
		return streamLabel(x)
	}
	return "post"
}

// sight works out what the edge saw of call c's stream, and derives the
// events its ids prove were emitted and never carried.
func (d *derivedLedger) sight(c *wireCall, evs []edgeEvent, carried, numbered bool) *streamSight {
	s := &streamSight{}
	breaks := d.breaks(c)
	if c.result && len(breaks) == 0 {
		return s
	}
	when := "before its result crossed the server edge"
	if len(breaks) > 0 {
		s.BrokeUS = d.events.exchanges[breaks[0]].EndUS
		for _, e := range evs {
			if e.x == breaks[0] {
				s.BrokeN = max(s.BrokeN, e.n)
			}
		}
		s.BrokeN = cmp.Or(s.BrokeN, c.startN)
		when = "at " + seconds(s.BrokeUS) + " before its result"
	}
	why := fmt.Sprintf("the stream of request %s in session %s stopped being carried %s", c.key.RequestID, c.key.Session, when)
	switch {
	case c.task != "":
		s.Partial = fmt.Sprintf("request %s in session %s became task %s, whose events travel outside the call's stream", c.key.RequestID, c.key.Session, c.task)
	case c.modern && !c.result:
		s.Partial = why + ", which at 2026-07-28 cancels the call, and the server may have emitted more before it noticed"
	case !c.result:
		s.Partial = why + ", and its result never crossed: the server may have emitted events nothing carried"
	case !carried:
		s.Partial = why + ", and no event of it crossed the edge: the server may have emitted events while nothing carried it"
	case !numbered:
		s.Partial = why + ", and its events carry no ids that tell what the server emitted while it was away"
	default:
		reason := d.proveGaps(c, evs)
		if reason == "" {
			reason = "ids number only the events the server kept for a resume, and a server may emit events it never numbers (one that queues a call's notifications while no stream carries it and refuses them once the queue is full does)"
		}
		s.Partial = why + ", and its event ids do not prove what the server emitted while it was away: " + reason
	}
	return s
}

// breaks lists the exchanges that carried call c's stream and ended before
// its result crossed, in the order they started.
func (d *derivedLedger) breaks(c *wireCall) []wire.ExchangeKey {
	var out []wire.ExchangeKey
	for _, k := range d.events.bySession[c.key.Session] {
		x := d.events.exchanges[k]
		carries := k == c.x || x.Method == http.MethodGet && x.stream == c.key.RequestID
		if !carries || c.result && c.resultX == k || !x.Ended {
			continue
		}
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b wire.ExchangeKey) int {
		return cmp.Or(cmp.Compare(d.events.exchanges[a].TUS, d.events.exchanges[b].TUS), cmp.Compare(a.Conn, b.Conn), cmp.Compare(a.X, b.X))
	})
	return out
}

// proveGaps derives the events whose ids the resumes of call c's stream
// skipped, when the ids prove them (see the top of this file); it returns
// why they do not, or "".
func (d *derivedLedger) proveGaps(c *wireCall, evs []edgeEvent) string {
	if why := dense(evs); why != "" {
		return why
	}
	prefix, ok := idPrefix(evs)
	switch {
	case !ok:
		return "its ids do not share one form"
	case prefix != "" && d.prefixShared(c, prefix):
		return fmt.Sprintf("another stream of the session uses ids of the form %s<n>", prefix)
	}
	type skip struct{ from, to, n, fromUS, toUS int64 }
	var skips []skip
	carried := map[int64]bool{}
	var top edgeEvent // the event with the highest id carried so far
	prev := wire.ExchangeKey{Conn: -1, X: -1}
	for _, e := range evs {
		if e.num == 0 {
			continue
		}
		carried[e.num] = true
		if e.x != prev && top.num > 0 && e.num > top.num+1 {
			skips = append(skips, skip{from: top.num, to: e.num, n: e.n, fromUS: top.tus, toUS: e.tus})
		}
		prev = e.x
		if e.num > top.num {
			top = e
		}
	}
	if prefix == "" {
		for _, k := range skips {
			if why := d.aloneIn(c, k.fromUS, k.toUS, k.from, k.to); why != "" {
				return why
			}
		}
	}
	for _, k := range skips {
		for id := k.from + 1; id < k.to; id++ {
			if carried[id] {
				continue
			}
			d.addDerived(&wire.Record{N: k.n, TUS: k.fromUS}, sideeffects.Record{Kind: sideeffects.KindEventEmitted,
				Session: c.key.Session, Client: c.client, RequestID: c.key.RequestID, Tool: c.tool, EventID: id, Seq: id},
				fmt.Sprintf("the stream resumed there with id %d after id %d, and its ids count one by one, so id %d was emitted and never carried",
					k.to, k.from, id))
		}
	}
	return ""
}

// dense says why the ids of a stream's events are not dense (each event
// with an id carried right after another on one connection has the next
// number), or "" when they are; at least one such pair must have been
// carried.
func dense(evs []edgeEvent) string {
	pairs := 0
	for i := 1; i < len(evs); i++ {
		a, b := evs[i-1], evs[i]
		if a.x != b.x || a.num == 0 || b.num == 0 {
			continue
		}
		if b.num != a.num+1 {
			return fmt.Sprintf("ids %s and %s were carried in a row on one connection", a.raw, b.raw)
		}
		pairs++
	}
	if pairs == 0 {
		return "no two events were carried in a row, so nothing shows how its ids count"
	}
	return ""
}

// idPrefix returns the part before the number that every id of evs shares
// ("" for plain numbers), and false when they do not share one.
func idPrefix(evs []edgeEvent) (string, bool) {
	prefix, set := "", false
	for _, e := range evs {
		if e.raw == "" {
			continue
		}
		p := strings.TrimRight(e.raw, "0123456789")
		if set && p != prefix {
			return "", false
		}
		prefix, set = p, true
	}
	return prefix, set
}

// prefixShared reports whether another stream of c's session carried ids
// with prefix.
func (d *derivedLedger) prefixShared(c *wireCall, prefix string) bool {
	for key, evs := range d.events.streams {
		if key.Session != c.key.Session || key == c.key {
			continue
		}
		if _, ok := idPrefix(evs); ok && slices.ContainsFunc(evs, func(e edgeEvent) bool {
			return e.raw != "" && strings.TrimRight(e.raw, "0123456789") == prefix
		}) {
			return true
		}
	}
	return false
}

// aloneIn says why ids from (from, to) skipped by call c's stream between
// fromUS and toUS may belong to another stream of its session, or "" when
// none could have taken them: no other stream of the session carried an id
// in that range, was open as an event stream then, or had a call running.
func (d *derivedLedger) aloneIn(c *wireCall, fromUS, toUS, from, to int64) string {
	keys := slices.SortedFunc(maps.Keys(d.events.streams), func(a, b StreamKey) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.RequestID, b.RequestID))
	})
	for _, key := range keys {
		if key.Session != c.key.Session || key == c.key {
			continue
		}
		for _, e := range d.events.streams[key] {
			if e.num > from && e.num < to {
				return fmt.Sprintf("another stream of the session (request %s) carried id %s in the range skipped", key.RequestID, e.raw)
			}
		}
	}
	for _, k := range d.events.bySession[c.key.Session] {
		x := d.events.exchanges[k]
		if x.stream == c.key.RequestID || !x.SSE || x.TUS > toUS || x.Ended && x.EndUS < fromUS {
			continue
		}
		return fmt.Sprintf("another event stream of the session (%s) was open while the ids were skipped", strings.ToUpper(x.Method))
	}
	for _, key := range d.order {
		o := d.calls[key]
		if key.Session != c.key.Session || key == c.key || o.refused || o.startUS > toUS {
			continue
		}
		if !o.result || o.resultUS >= fromUS {
			return fmt.Sprintf("another call of the session (request %s) was running while the ids were skipped", key.RequestID)
		}
	}
	return ""
}

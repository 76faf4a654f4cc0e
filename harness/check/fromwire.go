package check

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"slices"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// Reading the server edge of the wire as a ledger.
//
// What crossed the server edge is what reached the server and what it sent,
// so it tells most of what an instrumented server writes in its ledger, for a
// server that writes nothing: [ledgerFromWire] derives those records, and
// the same accounting as for a real ledger judges them. Each derived record
// has Source "wire" and N set to the wire record it comes from, so evidence
// points at wire.jsonl.
//
// The derivation, record by record:
//
//   - session_opened: a 2xx answer to initialize carrying Mcp-Session-Id,
//     for the client named in the initialize request.
//   - session_closed: a 2xx answer to DELETE (deleted), a 404 answer to a
//     request on the session (gone: the server says it no longer knows it),
//     or an SSE event of type close (terminated).
//   - call_started: a tools/call request, once the server did not refuse it
//     (an answer of 400 or more, or a JSON-RPC error, means the tool never
//     ran, and nothing of the call is derived).
//     It carries the call's idempotency_key argument, which makes repeating
//     the operation harmless as a key on a charge record would.
//     A response with resultType "task" (2026-07-28), or carrying a task
//     (a 2025-11-25 CreateTaskResult), is no result: the call became a
//     task, whose result is fetched later, and its call_started names the
//     task as its stream, task:<id>, as the servers' ledgers do.
//   - charge: a call_started of an operation that is not idempotent
//     ([Ops.Idempotent]): the wire cannot see money move, but it sees a side
//     effect invoked, and an operation invoked twice at the server is a
//     duplicate side effect as far as anyone outside the server can tell.
//   - event_emitted: a notifications/progress event, with its event id and
//     its progress number as seq. Events the server emitted while no
//     connection carried its stream never cross the edge; when a call's
//     progress numbers are whole, those it skipped are derived too, with
//     event id 0 (placed by seq alone, as for an SDK server's ledger): up to
//     the total when the call's result crossed the edge, else up to the
//     highest number seen.
//   - result_written: the response to a tools/call, with its event id (0 for
//     a JSON answer); for a task, each hand-out of its result: a tasks/result
//     answered with a result (2025-11-25), or a tasks/get answered with the
//     task completed (2026-07-28), on stream task:<id>, and no result is
//     derived for a task whose result never crossed the edge: the task
//     holds it, and delivers it only when asked. A call whose result never crossed the edge, on a server
//     that was not restarted or crashed after the call began, still produced
//     one into its stream (a tool keeps running when its connection drops):
//     it is derived at the end of the run with event id 0, and nobody read
//     it unless a client resumed the stream and got it. At 2026-07-28
//     (MCP-Protocol-Version on the request) closing the stream cancels
//     the call, so no result is derived for one whose stream closed
//     without it: the server must not send one, and the ledger says what
//     the tool did.
//
// Progress events and results are tied to their call through the request's
// progress token (or its id, which servers use when there is none), the
// response id, and for a GET resumed with Last-Event-ID, the call the event
// id belonged to when it was first sent.

// derivedLedger is the state of one pass over the server edge.
type derivedLedger struct {
	ops   Ops
	kills []int64 // when the server was restarted or crashed, on the run clock

	edge   *edgeReader
	out    []sideeffects.Record
	calls  map[StreamKey]*wireCall
	order  []StreamKey
	closed map[string]bool
	lastN  int64
	lastUS int64
	// tasks maps a task id to the call it runs; fetches the requests that
	// may hand a task's result out (tasks/result, and tasks/get of the
	// extension) to their task's id.
	tasks   map[string]*wireCall
	fetches map[StreamKey]string
}

// wireCall is one tools/call that reached the server.
type wireCall struct {
	key       StreamKey
	client    string
	tool      string
	op        string
	idem      bool
	startN    int64
	startUS   int64
	refused   bool
	result    bool
	failed    bool    // the result was an error: the tool stopped short
	seqs      []int64 // whole progress numbers seen
	total     int64
	fractions bool // some progress number was not a whole number
	revealN   int64
	modern    bool   // a 2026-07-28 request: a closed stream cancels it
	idemKey   string // the call's idempotency_key argument
	task      string // the task the server made of the call, if any
}

func ledgerFromWire(recs []wire.Record, ops Ops, kills []int64) []sideeffects.Record {
	d := &derivedLedger{
		ops: ops, kills: kills, edge: newEdgeReader(), calls: map[StreamKey]*wireCall{}, closed: map[string]bool{},
		tasks: map[string]*wireCall{}, fetches: map[StreamKey]string{},
	}
	recs = inExchangeOrder(recs)
	for i := range recs {
		r := &recs[i]
		if r.Edge != wire.EdgeServer {
			continue
		}
		d.lastN, d.lastUS = max(d.lastN, r.N), max(d.lastUS, r.TUS)
		switch r.Kind {
		case wire.KindRequest:
			d.request(r)
		case wire.KindResponse:
			d.response(r)
		case wire.KindEvent:
			d.event(r)
		}
	}
	d.settle()
	slices.SortStableFunc(d.out, func(a, b sideeffects.Record) int { return cmp.Compare(a.N, b.N) })
	return d.out
}

func (d *derivedLedger) add(r *wire.Record, rec sideeffects.Record) {
	rec.ID = fmt.Sprintf("wire-%d-%d", r.N, len(d.out))
	rec.N, rec.TUS, rec.Source = r.N, r.TUS, SourceWire
	d.out = append(d.out, rec)
}

func (d *derivedLedger) request(r *wire.Record) {
	x := d.edge.request(r)
	for i := range r.Messages {
		if m := &r.Messages[i]; (m.Method == mcpwire.MethodTasksResult || m.Method == mcpwire.MethodTasksGet) && m.IsRequest() && m.TaskID != "" {
			d.fetches[StreamKey{Session: x.session, RequestID: m.ID}] = m.TaskID
		}
		if m := &r.Messages[i]; m.Method == mcpwire.MethodToolsCall && m.IsRequest() {
			key := StreamKey{Session: x.session, RequestID: m.ID}
			if _, seen := d.calls[key]; !seen {
				d.order = append(d.order, key)
			}
			d.calls[key] = &wireCall{key: key, client: d.edge.client(x), tool: m.Tool, op: d.ops.Key(m.Tool, m.Args, m.ArgsDigest),
				idem: d.ops.Idempotent(m.Tool, m.Args), startN: r.N, startUS: r.TUS,
				modern: r.Header != nil && mcpwire.ModernVersion(r.Header.ProtocolVersion)}
			if k, ok := lookup(m.Args, "idempotency_key"); ok {
				d.calls[key].idemKey = k
			}
		}
	}
}

func (d *derivedLedger) response(r *wire.Record) {
	x := d.edge.exchange(r)
	if x == nil {
		return
	}
	switch {
	case r.Status >= 400:
		for _, id := range x.calls {
			d.refuse(StreamKey{Session: x.session, RequestID: id})
		}
		if r.Status == http.StatusNotFound && x.session != "" {
			d.closeSession(r, x.session, "gone")
		}
		return
	case x.method == http.MethodDelete && r.Status < 300 && x.session != "":
		d.closeSession(r, x.session, "deleted")
		return
	}
	if id, ok := d.edge.opened(r, x); ok {
		protocol := ""
		for _, m := range r.Messages {
			protocol = cmp.Or(protocol, m.Protocol)
		}
		d.add(r, sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: id, Client: x.init, Detail: protocol})
	}
	for i := range r.Messages {
		d.answer(r, x, &r.Messages[i], 0)
	}
}

func (d *derivedLedger) closeSession(r *wire.Record, session, reason string) {
	if d.closed[session] {
		return
	}
	d.closed[session] = true
	d.add(r, sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: session, Client: d.edge.clientOf[session], Reason: reason})
}

// refuse marks a call the server turned away: it never ran.
func (d *derivedLedger) refuse(key StreamKey) {
	if c := d.calls[key]; c != nil && !c.result {
		c.refused = true
	}
}

// answer handles a response message on exchange x, sent as the SSE event
// with id eventID (0 for a JSON body).
func (d *derivedLedger) answer(r *wire.Record, x *exchange, m *wire.Message, eventID int64) {
	if !m.Response {
		return
	}
	if id, ok := d.fetches[StreamKey{Session: x.session, RequestID: m.ID}]; ok {
		d.fetched(r, x, m, id, eventID)
		return
	}
	c := d.calls[StreamKey{Session: x.session, RequestID: m.ID}]
	if c == nil || c.result || c.task != "" {
		return
	}
	if m.ResultType == mcpwire.ResultTask || m.ResultType == "" && m.TaskID != "" && m.TaskStatus != "" && m.ErrorCode == 0 {
		// A task handle: the result comes later, by tasks/get or
		// tasks/result.
		c.task = m.TaskID
		d.tasks[m.TaskID] = c
		return
	}
	if m.IsError && m.ErrorCode != 0 && turnedAway(m.ErrorCode, c) {
		c.refused = true
		return
	}
	c.result, c.failed, c.revealN = true, m.IsError, r.N
	d.add(r, sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: x.session, Client: c.client,
		RequestID: m.ID, Tool: c.tool, OrderID: c.op, Stream: streamLabel(x), EventID: eventID, IsError: m.IsError})
}

// fetched derives a task's result handed out by the answer m to a
// tasks/result or tasks/get request about task id: a tasks/result
// answered with a result, a tasks/get answered with the task completed
// and its result inside (the extension's). A JSON-RPC error hands nothing
// out.
func (d *derivedLedger) fetched(r *wire.Record, x *exchange, m *wire.Message, id string, eventID int64) {
	c := d.tasks[id]
	switch {
	case c == nil, m.ErrorCode != 0 || m.ErrorMessage != "":
		return
	case m.TaskStatus != "" && m.TaskStatus != mcpwire.TaskCompleted: // tasks/get of a task not done, or of a 2025-11-25 task
		return
	case m.TaskStatus == "" && m.TaskID != id: // neither tasks/get's task nor tasks/result's related task
		return
	}
	if m.TaskStatus == mcpwire.TaskCompleted && m.ResultType != mcpwire.ResultComplete {
		return // a 2025-11-25 tasks/get: the status alone, no result
	}
	c.result, c.failed, c.revealN = true, m.IsError, r.N
	d.add(r, sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: c.key.Session, Client: c.client,
		RequestID: c.key.RequestID, Tool: c.tool, OrderID: c.op, Stream: "task:" + id, EventID: eventID, IsError: m.IsError})
}

// turnedAway says whether a JSON-RPC error answering a tools/call means the
// server refused the request before any tool ran: a parse error, an invalid
// request, an unknown method, or invalid params (an unknown tool, bad
// arguments), and no progress of the call seen. Any other error (internal,
// or the server's own codes) may end a tool that ran, and a call that
// streamed progress certainly ran: mcp-go, say, answers -32603 when its
// notification queue fills while the client is cut off.
func turnedAway(code int, c *wireCall) bool {
	if len(c.seqs) > 0 || c.fractions {
		return false
	}
	switch code {
	case mcpwire.CodeParseError, mcpwire.CodeInvalidRequest, mcpwire.CodeMethodNotFound, mcpwire.CodeInvalidParams:
		return true
	}
	return false
}

func (d *derivedLedger) event(r *wire.Record) {
	x := d.edge.exchange(r)
	if x == nil {
		return
	}
	if r.EventType == mcpwire.EventClose && x.session != "" {
		d.closeSession(r, x.session, "terminated")
		return
	}
	id := mcpwire.EventNumber(r.EventID)
	owner := x.stream
	for i := range r.Messages {
		m := &r.Messages[i]
		owner = d.edge.owner(x, m)
		switch {
		case m.Response:
			d.answer(r, x, m, id)
		case m.Method == mcpwire.MethodProgress:
			d.progress(r, x, owner, m, id)
		}
	}
	d.edge.noteEvent(x, r.EventID, owner)
}

func (d *derivedLedger) progress(r *wire.Record, x *exchange, owner string, m *wire.Message, eventID int64) {
	c := d.calls[StreamKey{Session: x.session, RequestID: owner}]
	if c == nil || m.Progress == nil {
		return
	}
	p := *m.Progress
	if m.Total != nil {
		c.total = max(c.total, int64(*m.Total))
	}
	if p < 1 || p != math.Trunc(p) || p > math.MaxInt32 {
		c.fractions = true
		return
	}
	seq := int64(p)
	c.seqs = append(c.seqs, seq)
	c.revealN = r.N
	d.add(r, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: x.session, Client: c.client,
		RequestID: owner, Tool: c.tool, Stream: streamLabel(x), EventID: eventID, Seq: seq})
}

// settle derives, once the whole edge is read, the call records that depend
// on how each call ended: call_started and charge for calls the server did
// not refuse, the events a call skipped, and the results that never crossed.
func (d *derivedLedger) settle() {
	for _, key := range d.order {
		c := d.calls[key]
		if c.refused {
			d.drop(key)
			continue
		}
		start := &wire.Record{N: c.startN, TUS: c.startUS}
		stream := ""
		if c.task != "" {
			stream = "task:" + c.task
		}
		d.add(start, sideeffects.Record{Kind: sideeffects.KindCallStarted, Session: key.Session, Client: c.client,
			RequestID: key.RequestID, Tool: c.tool, OrderID: c.op, IdempotencyKey: c.idemKey, Stream: stream})
		if !c.idem {
			d.add(start, sideeffects.Record{Kind: sideeffects.KindCharge, Session: key.Session, Client: c.client,
				RequestID: key.RequestID, Tool: c.tool, OrderID: c.op, AmountCents: 1, Detail: "invoked at the server"})
		}
		d.skipped(c)
		if !c.result && !c.modern && c.task == "" && !d.killedAfter(c.startUS) {
			end := &wire.Record{N: d.lastN + 1, TUS: d.lastUS + 1}
			d.add(end, sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: key.Session, Client: c.client,
				RequestID: key.RequestID, Tool: c.tool, OrderID: c.op,
				Detail: "derived: the call reached the server and its result never crossed the server edge"})
		}
	}
}

// drop removes what was derived of a call the server refused.
func (d *derivedLedger) drop(key StreamKey) {
	d.out = slices.DeleteFunc(d.out, func(r sideeffects.Record) bool {
		return r.Session == key.Session && r.RequestID == key.RequestID &&
			(r.Kind == sideeffects.KindEventEmitted || r.Kind == sideeffects.KindResultWritten)
	})
}

// skipped derives the progress events of c the edge never carried.
func (d *derivedLedger) skipped(c *wireCall) {
	if c.fractions || len(c.seqs) == 0 && !c.result {
		return
	}
	top := slices.Max(append([]int64{0}, c.seqs...))
	if c.result && !c.failed && c.total > top { // a tool that failed stopped short of its total
		top = c.total
	}
	seen := map[int64]bool{}
	for _, s := range c.seqs {
		seen[s] = true
	}
	at := &wire.Record{N: c.revealN, TUS: c.startUS}
	for s := int64(1); s <= top; s++ {
		if !seen[s] {
			d.add(at, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: c.key.Session, Client: c.client,
				RequestID: c.key.RequestID, Tool: c.tool, Seq: s, Detail: "derived: a progress number the server edge skipped"})
		}
	}
}

// killedAfter reports whether the server was restarted or crashed at or
// after us: a call running then may have died with the process.
func (d *derivedLedger) killedAfter(us int64) bool {
	return slices.ContainsFunc(d.kills, func(k int64) bool { return k >= us })
}

package check

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Reading the server edge of the wire as a ledger.
//
// What crossed the server edge is what reached the server and what it sent,
// so it tells most of what an instrumented server writes in its ledger, for a
// server that writes nothing: [ledgerFromWire] derives those records, and
// the same accounting as for a real ledger judges them. Each derived record
// has Source "wire" and N set to the wire record it comes from, so evidence
// points at wire.jsonl; a record that stands for something no wire record
// shows (a result written into a stream nobody carried, events whose ids a
// resumed stream skipped) is noted as derived, with the records it was
// derived from, and its evidence says so.
//
// The derivation, record by record:
//
//   - session_opened: a 2xx answer to initialize carrying Mcp-Session-Id,
//     for the client named in the initialize request. The name is what the
//     client called itself: it proves who held the session only where the
//     client's own history says so (see account.go).
//   - session_closed: a 2xx answer to DELETE (deleted), a 404 answer to a
//     request on the session (gone: the server says it no longer knows it),
//     or an SSE event of type close (terminated).
//   - call_started: a tools/call request that the server received, once it
//     did not refuse it: an answer of 400 or more, or a JSON-RPC error that
//     turns a request away (parse error, invalid request, unknown method,
//     invalid params: an unknown tool, bad arguments), means the tool never
//     ran, and nothing of the call is derived. Nor is anything derived of a
//     request that crossed the edge after the server process holding its
//     connection was killed (a SIGKILL in the fault log) and that got no
//     answer: no process was alive to receive it.
//     It carries the call's idempotency_key argument, which makes repeating
//     the operation harmless as a key on a charge record would.
//     A response with resultType "task" (2026-07-28), or carrying a task
//     (a 2025-11-25 CreateTaskResult), is no result: the call became a
//     task, whose result is fetched later, and its call_started names the
//     task as its stream, task:<id>, as the servers' ledgers do.
//   - charge: a call_started of an operation that is not idempotent
//     ([Ops.Idempotent]): the wire cannot see money move, but it sees a side
//     effect invoked. What ran is what the server answered or acknowledged,
//     or what its process was alive to receive. A charge is uncertain (it
//     neither counts as one nor proves a duplicate, though it may make one)
//     when the wire cannot tell whether the side effect happened: the tool
//     answered with an error (isError), the server was killed while the
//     call ran, or at 2026-07-28 its stream closed before its result (which
//     cancels it, and a tool may commit before it notices).
//     The charge's order is the operation the call invoked: the one the
//     issuing client's own history names for the request, else the value
//     of the workload's operation key ([Ops]); an operation told apart only
//     by its arguments is unproven: a second invocation of it may be a new
//     call as well as a retry, and the accounts say they cannot tell.
//   - event_emitted: every notifications/progress event of a call (see
//     wireevents.go): its event id, and as seq its id's number where the
//     call's events carry numeric ids, else its place among the call's
//     events. Progress numbers are the tool's own business (steps of 10,
//     bytes, fractions) and say nothing of how many events there were.
//   - result_written: the response to a tools/call, with its event id (0 for
//     a JSON answer); for a task, each hand-out of its result: a tasks/result
//     answered with a result (2025-11-25), or a tasks/get answered with the
//     task completed (2026-07-28), on stream task:<id>, and no result is
//     derived for a task whose result never crossed the edge: the task
//     holds it, and delivers it only when asked. A call whose result never
//     crossed the edge, on a server that was not killed after the call
//     began, still produced one into its stream (a tool keeps running when
//     its connection drops): it is derived at the end of the run, from the
//     call's request record, and nobody read it unless a client resumed
//     the stream and got it. At 2026-07-28 (MCP-Protocol-Version on the
//     request) closing the stream cancels the call, so no result is derived
//     for one whose stream closed without it.
//
// Progress events and results are tied to their call through the request's
// progress token (or its id, which servers use when there is none), the
// response id, and for a GET resumed with Last-Event-ID, the call the event
// id belonged to when it was first sent.

// wireLedger is what the server edge shows, as ledger records, with what
// the wire proves and does not prove of them.
type wireLedger struct {
	records []sideeffects.Record
	// derived says, by record ID, by what rule a record that no wire record
	// shows was derived from the wire record its N names.
	derived map[string]string
	// uncertain says, by record ID, why a charge may or may not have
	// happened.
	uncertain map[string]string
	// unproven names the orders (operations) told apart only by their
	// arguments.
	unproven map[string]bool
	// sight says, per call stream with an event, whether the edge carried
	// every event the server emitted on it.
	sight map[StreamKey]*streamSight
	// keys places the events of each call stream (see wireevents.go).
	keys map[StreamKey]*eventKeys
	// alive holds, per session, when the server answered a request of it
	// with a success: proofs the server still held it then.
	alive map[string][]int64
	// unansweredInits counts the initialize requests that reached the
	// server and whose answer never crossed back: it may have opened a
	// session for each.
	unansweredInits int
	// stops is when the server (or a replica) was stopped: a crash or a
	// restart, which ends the sessions a server keeps in memory and not
	// those it keeps in a durable store.
	stops []int64
}

// stoppedBetween returns when the server was stopped in (from, to] with no
// success answered for session in [then, to]: the session may have ended
// then, or outlived the stop in a durable store. It returns -1 when no
// stop leaves the session in doubt.
func (w *wireLedger) stoppedBetween(session string, from, to int64) int64 {
	for _, k := range w.stops {
		if k <= from || k > to {
			continue
		}
		if !slices.ContainsFunc(w.alive[session], func(t int64) bool { return t >= k && t <= to }) {
			return k
		}
	}
	return -1
}

// derivedLedger is the state of one pass over the server edge.
type derivedLedger struct {
	ops   Ops
	kills []int64 // when the server (or a replica) was restarted or crashed, on the run clock
	// direct is when the one server process the edge connects to was
	// killed (SIGKILL): a connection opened before one is dead after it.
	direct []int64
	// stopping are the windows in which the server was restarted (stopped,
	// then started): a request that reached it then may never have run.
	stopping [][2]int64
	// named is the order the issuing client's own history gives each
	// request, by its stream.
	named map[StreamKey]string

	edge  *edgeReader
	out   wireLedger
	calls map[StreamKey]*wireCall
	// inits are the initialize requests no answer has crossed yet.
	inits  map[wire.ExchangeKey]bool
	order  []StreamKey
	closed map[string]bool
	opened map[int64]int64 // connection to when it opened
	events *eventLog
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
	key      StreamKey
	client   string
	tool     string
	op       string
	unproven bool // op is the digest of the arguments: no key tells it apart
	idem     bool
	startN   int64
	startUS  int64
	x        wire.ExchangeKey
	refused  bool
	answered bool // its exchange got a response
	dead     bool // it crossed into a connection whose server process was dead
	stopping bool // it reached the server while the server was being restarted
	result   bool
	resultN  int64
	resultUS int64
	resultX  wire.ExchangeKey // the exchange that carried the result
	failed   bool             // the result was an error: the tool stopped short
	modern   bool             // a 2026-07-28 request: a closed stream cancels it
	idemKey  string           // the call's idempotency_key argument
	task     string           // the task the server made of the call, if any
}

// ledgerFromWire derives the ledger of the server edge; log is the fault
// log (when the server was killed), and named gives the orders the issuing
// client's own history names (nil when it wrote none).
func ledgerFromWire(recs []wire.Record, ops Ops, log []faults.Entry, named map[StreamKey]string) *wireLedger {
	d := &derivedLedger{
		ops: ops, kills: serverKills(log), direct: directKills(log), stopping: restartWindows(log), named: named, edge: newEdgeReader(), calls: map[StreamKey]*wireCall{}, inits: map[wire.ExchangeKey]bool{}, closed: map[string]bool{},
		opened: map[int64]int64{}, events: newEventLog(), tasks: map[string]*wireCall{}, fetches: map[StreamKey]string{},
		out: wireLedger{derived: map[string]string{}, uncertain: map[string]string{}, unproven: map[string]bool{},
			sight: map[StreamKey]*streamSight{}, keys: map[StreamKey]*eventKeys{}, alive: map[string][]int64{}, stops: serverKills(log)},
	}
	recs = inExchangeOrder(recs)
	for i := range recs {
		r := &recs[i]
		if r.Edge != wire.EdgeServer {
			continue
		}
		d.lastN, d.lastUS = max(d.lastN, r.N), max(d.lastUS, r.TUS)
		x := d.edge.observe(r)
		switch {
		case r.Kind == wire.KindOpen:
			d.opened[r.Conn] = r.TUS
		case x == nil:
		case r.Kind == wire.KindRequest:
			d.request(r, x)
		case r.Kind == wire.KindResponse:
			d.response(r, x)
		case r.Kind == wire.KindEvent:
			d.event(r, x)
		}
	}
	d.settle()
	d.out.unansweredInits = len(d.inits)
	slices.SortStableFunc(d.out.records, func(a, b sideeffects.Record) int { return cmp.Compare(a.N, b.N) })
	return &d.out
}

// add appends rec, derived from wire record r.
func (d *derivedLedger) add(r *wire.Record, rec sideeffects.Record) *sideeffects.Record {
	rec.ID = fmt.Sprintf("wire-%d-%d", r.N, len(d.out.records))
	rec.N, rec.TUS, rec.Source = r.N, r.TUS, SourceWire
	d.out.records = append(d.out.records, rec)
	return &d.out.records[len(d.out.records)-1]
}

// addDerived appends rec, which no wire record shows, derived from wire
// record r by the rule from says.
func (d *derivedLedger) addDerived(r *wire.Record, rec sideeffects.Record, from string) {
	id := d.add(r, rec).ID
	d.out.derived[id] = from
}

func (d *derivedLedger) request(r *wire.Record, x *exchange) {
	d.events.request(x)
	for i := range r.Messages {
		if m := &r.Messages[i]; m.Method == mcp.MethodInitialize && m.IsRequest() {
			d.inits[x.Key] = true
		}
		if m := &r.Messages[i]; (m.Method == mcp.MethodTasksResult || m.Method == mcp.MethodTasksGet) && m.IsRequest() && m.TaskID != "" {
			d.fetches[StreamKey{Session: x.session, RequestID: m.ID}] = m.TaskID
		}
		if m := &r.Messages[i]; m.Method == mcp.MethodToolsCall && m.IsRequest() {
			key := StreamKey{Session: x.session, RequestID: m.ID}
			if _, seen := d.calls[key]; !seen {
				d.order = append(d.order, key)
			}
			op, proven := d.ops.keyOf(m.Tool, m.Args, m.ArgsDigest)
			if name, ok := d.named[key]; ok {
				op, proven = name, true
			}
			c := &wireCall{key: key, client: d.edge.client(x), tool: m.Tool, op: op, unproven: !proven,
				idem: d.ops.Idempotent(m.Tool, m.Args), startN: r.N, startUS: r.TUS, x: x.Key,
				modern: r.Header != nil && mcp.ModernVersion(r.Header.ProtocolVersion)}
			if opened, ok := d.opened[r.Conn]; ok {
				c.dead = d.killedBetween(opened, r.TUS)
			}
			c.stopping = slices.ContainsFunc(d.stopping, func(w [2]int64) bool { return w[0] <= r.TUS && r.TUS <= w[1] })
			if k, ok := lookup(m.Args, "idempotency_key"); ok {
				c.idemKey = k
			}
			d.calls[key] = c
		}
	}
}

func (d *derivedLedger) response(r *wire.Record, x *exchange) {
	delete(d.inits, x.Key)
	for _, id := range x.calls {
		if c := d.calls[StreamKey{Session: x.session, RequestID: id}]; c != nil && c.x == x.Key {
			c.answered = true
		}
	}
	if r.Status < 400 && x.session != "" {
		d.out.alive[x.session] = append(d.out.alive[x.session], r.TUS)
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
	case x.Method == http.MethodDelete && r.Status < 300 && x.session != "":
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
	if taskHandle(m) {
		// A task handle: the result comes later, by tasks/get or
		// tasks/result.
		c.task = m.TaskID
		d.tasks[m.TaskID] = c
		return
	}
	if m.IsError && m.ErrorCode != 0 && turnedAway(m.ErrorCode, d.events.carried(c.key)) {
		c.refused = true
		return
	}
	c.result, c.failed, c.resultN, c.resultUS, c.resultX = true, m.IsError, r.N, r.TUS, x.Key
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
	case m.TaskStatus != "" && m.TaskStatus != mcp.TaskCompleted: // tasks/get of a task not done, or of a 2025-11-25 task
		return
	case m.TaskStatus == "" && m.TaskID != id: // neither tasks/get's task nor tasks/result's related task
		return
	}
	if m.TaskStatus == mcp.TaskCompleted && m.ResultType != mcp.ResultComplete {
		return // a 2025-11-25 tasks/get: the status alone, no result
	}
	c.result, c.failed, c.resultN, c.resultUS, c.resultX = true, m.IsError, r.N, r.TUS, x.Key
	d.add(r, sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: c.key.Session, Client: c.client,
		RequestID: c.key.RequestID, Tool: c.tool, OrderID: c.op, Stream: "task:" + id, EventID: eventID, IsError: m.IsError})
}

// turnedAway says whether a JSON-RPC error answering a tools/call means the
// server refused the request before any tool ran: a parse error, an invalid
// request, an unknown method, or invalid params (an unknown tool, bad
// arguments), and no event of the call carried. Any other error (internal,
// or the server's own codes) may end a tool that ran, and a call that
// streamed progress certainly ran: mcp-go, say, answers -32603 when its
// notification queue fills while the client is cut off.
func turnedAway(code int, carried int) bool {
	if carried > 0 {
		return false
	}
	switch code {
	case mcp.CodeParseError, mcp.CodeInvalidRequest, mcp.CodeMethodNotFound, mcp.CodeInvalidParams:
		return true
	}
	return false
}

func (d *derivedLedger) event(r *wire.Record, x *exchange) {
	if r.EventType == mcp.EventClose && x.session != "" {
		d.closeSession(r, x.session, "terminated")
		return
	}
	id := mcp.EventNumber(r.EventID)
	owner := x.stream
	for i := range r.Messages {
		m := &r.Messages[i]
		owner = d.edge.owner(x, m)
		switch {
		case m.Response:
			d.answer(r, x, m, id)
		case m.Method == mcp.MethodProgress:
			d.events.progress(StreamKey{Session: x.session, RequestID: owner}, x.Key, r)
		}
	}
	if len(r.Messages) == 0 || !slices.ContainsFunc(r.Messages, func(m wire.Message) bool { return m.Method == mcp.MethodProgress }) {
		d.events.other(StreamKey{Session: x.session, RequestID: owner}, x.Key, r)
	}
	d.edge.noteEvent(x, r.EventID, owner)
}

// settle derives, once the whole edge is read, the call records that depend
// on how each call ended: call_started and charge for calls that ran, their
// events, and the results that never crossed.
func (d *derivedLedger) settle() {
	for _, key := range d.order {
		c := d.calls[key]
		if c.refused || c.dead && !c.answered {
			continue
		}
		if c.unproven {
			d.out.unproven[c.op] = true
		}
		start := &wire.Record{N: c.startN, TUS: c.startUS}
		stream := ""
		if c.task != "" {
			stream = "task:" + c.task
		}
		d.add(start, sideeffects.Record{Kind: sideeffects.KindCallStarted, Session: key.Session, Client: c.client,
			RequestID: key.RequestID, Tool: c.tool, OrderID: c.op, IdempotencyKey: c.idemKey, Stream: stream})
		if !c.idem {
			charge := d.add(start, sideeffects.Record{Kind: sideeffects.KindCharge, Session: key.Session, Client: c.client,
				RequestID: key.RequestID, Tool: c.tool, OrderID: c.op, AmountCents: 1, Detail: "invoked at the server"})
			if why := d.uncertain(c); why != "" {
				d.out.uncertain[charge.ID] = why
			}
		}
		d.settleEvents(c)
		if !c.result && !c.modern && c.task == "" && !d.killedAfter(c.startUS) && !c.stopping {
			end := &wire.Record{N: c.startN, TUS: d.lastUS + 1}
			d.addDerived(end, sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: key.Session, Client: c.client,
				RequestID: key.RequestID, Tool: c.tool, OrderID: c.op},
				"the call reached the server there, and its result never crossed the server edge")
		}
	}
}

// uncertain says why the wire cannot tell whether call c's side effect
// happened, or "" when it ran.
func (d *derivedLedger) uncertain(c *wireCall) string {
	switch {
	case c.result && c.failed:
		return fmt.Sprintf("the tool answered request %s with an error (wire record %d): whether it had made its side effect, the wire cannot see", c.key.RequestID, c.resultN)
	case c.result, c.task != "":
		return ""
	case d.killedAfter(c.startUS):
		return fmt.Sprintf("the server process was killed while request %s ran (it reached the server at wire record %d and was never answered)", c.key.RequestID, c.startN)
	case c.stopping:
		return fmt.Sprintf("request %s reached the server while it was being restarted (wire record %d) and was never answered: it may never have run", c.key.RequestID, c.startN)
	case c.modern:
		return fmt.Sprintf("the stream of request %s (wire record %d) closed before its result, which at 2026-07-28 cancels the call, and a tool may commit before it notices", c.key.RequestID, c.startN)
	}
	return ""
}

// killedAfter reports whether the server was killed at or after us: a call
// running then may have died with the process.
func (d *derivedLedger) killedAfter(us int64) bool {
	return slices.ContainsFunc(d.kills, func(k int64) bool { return k >= us })
}

// killedBetween reports whether the server was killed in [from, to]: a
// connection opened at from belonged to a process dead at to.
func (d *derivedLedger) killedBetween(from, to int64) bool {
	return slices.ContainsFunc(d.direct, func(k int64) bool { return k >= from && k <= to })
}

// namedOrders is the order the client's own history names for each
// request (history invoke records), by its stream.
func namedOrders(hist []history.Record) map[StreamKey]string {
	out := map[StreamKey]string{}
	for i := range hist {
		h := &hist[i]
		if h.Kind == history.KindInvoke && h.RequestID != "" {
			out[StreamKey{Session: h.Session, RequestID: h.RequestID}] = cmp.Or(h.OrderID, h.Call)
		}
	}
	return out
}

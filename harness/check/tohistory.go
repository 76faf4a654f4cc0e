package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Reading the client edge of the wire as a history.
//
// A client that writes no history of its own (a team's own client, in any
// language) is judged from what crossed the client edge: what it sent and
// what was delivered to it. [historyFromWire] derives the history a
// recording client would have written:
//
//   - session_new: an initialize answer carrying Mcp-Session-Id, delivered;
//     the client is the one the initialize named.
//   - session_lost: a 404 delivered on the session (status_404), or a close
//     event (close_event).
//   - invoke: a tools/call the client sent. Where the workload's operation
//     key tells operations apart ([Ops]), the call is the operation it
//     invokes, so a retry of the same operation is an attempt of the same
//     call. Where only the arguments do, each request is a call of its own
//     (a load generator sends the same arguments many times): its order is
//     the arguments' digest, shared with every request like it, and the
//     accounts say they cannot tell whether a second one was a retry.
//   - ok and fail: the response to it delivered, as a JSON body or an SSE
//     event (its id then), read.
//   - event: a progress notification delivered, its progress number as seq.
//   - stream_break: the end of a connection that carried a call's request,
//     its stream or a resumed one before its response came (reset, eof,
//     error), whether or not any of the response had begun: a reset before
//     the response's first byte breaks the call as surely as one after.
//   - stream_break status_NNN: a 5xx answered to a tools/call or to a resume
//     (a balancer's or the fault proxy's 503 in the answer's place).
//   - task: a tools/call answered with a task (2026-07-28 resultType
//     "task", or a 2025-11-25 CreateTaskResult); its outcome is the result
//     a tasks/get (completed) or tasks/result hands out later, and an error
//     answered to either (no such task) breaks it (task_lost) and tells the
//     client its answer is lost.
//   - stream_break cancelled and fail (result cancelled): a
//     notifications/cancelled the client sent for a call whose answer had
//     not come: it gave the call up, and an answer that comes after is not
//     read.
//   - reconnect and resume: a GET with Last-Event-ID and the answer it got.
//   - gap: a 410 delivered with the range the server says is lost (from
//     last_event_id to resume_event_id, or head_event_id).
//   - unknown: a call whose last attempt got no answer and whose client was
//     told the answer is lost (a 404 or 410 on its session or its resume):
//     the client cannot have read the result, and it was told so. What the
//     client concluded inside itself the wire cannot show; a call that got no
//     answer and no such news is left unresolved.
//
// Each derived record is numbered by the wire record it comes from.

// derivedHistory is the state of one pass over the client edge.
type derivedHistory struct {
	ops    Ops
	edge   *edgeReader
	out    []history.Record
	lines  []int64                 // the wire record of each record of out
	callOf map[StreamKey]*edgeCall // attempts by stream
	byOp   map[string]*edgeCall    // the latest attempt of each client's operation
	lost   map[string]bool         // sessions the client was told are gone
	// past names the clients that had a request answered with a success
	// (an initialize, a server/discover, a call): past their first
	// exchange, what they send next may be a call.
	past    map[string]bool
	streams map[wire.ExchangeKey]string // exchanges awaiting or carrying an unfinished stream, to its request id
	// tasks maps a task id to the call it runs; fetches the requests that
	// ask about a task (tasks/get, tasks/result) to its id.
	tasks   map[string]*edgeCall
	fetches map[StreamKey]string
	// requests counts the tools/call requests of each client's operation.
	requests map[string]int
	// undistinguished names the operations told apart by their arguments
	// alone; repeated names those of them requested more than once (the
	// calls counted are then an upper bound: each such request may be a
	// retry).
	undistinguished map[string]bool
	repeated        int
	// merged counts the operations a key names that were requested more
	// than once: counted as one call each, though some requests may have
	// been calls of their own.
	merged int
	// late counts the events delivered after their call's answer, which a
	// client may drop.
	late int
	// used marks the connections a request crossed.
	used map[int64]bool
}

// edgeCall is one attempt of a call as the client edge shows it.
type edgeCall struct {
	client, call, tool string
	order              string // the operation: call, or the arguments' digest a call of its own shares
	task               string // the task the server made of the call
	key                StreamKey
	attempt            int
	answered, told     bool
}

func historyFromWire(recs []wire.Record, ops Ops) ([]history.Record, []int64) {
	d := deriveHistory(recs, ops)
	return d.out, d.lines
}

// deriveHistory reads the client edge of recs; see historyFromWire.
func deriveHistory(recs []wire.Record, ops Ops) *derivedHistory {
	d := &derivedHistory{ops: ops, edge: newEdgeReader(), callOf: map[StreamKey]*edgeCall{}, byOp: map[string]*edgeCall{},
		lost: map[string]bool{}, past: map[string]bool{}, streams: map[wire.ExchangeKey]string{}, requests: map[string]int{}, undistinguished: map[string]bool{},
		tasks: map[string]*edgeCall{}, fetches: map[StreamKey]string{}, used: map[int64]bool{}}
	var last wire.Record
	recs = inExchangeOrder(recs)
	for i := range recs {
		r := &recs[i]
		if r.Edge != wire.EdgeClient {
			continue
		}
		last = *r
		x := d.edge.observe(r)
		switch {
		case r.Kind == wire.KindBodyEnd:
			d.ended(r)
		case r.Kind == wire.KindClose:
			d.closed(r)
		case x == nil:
		case r.Kind == wire.KindRequest:
			d.request(r, x)
		case r.Kind == wire.KindResponse:
			d.response(r, x)
		case r.Kind == wire.KindEvent:
			d.event(r, x)
		}
	}
	d.settle(&last)
	return d
}

func (d *derivedHistory) add(r *wire.Record, h history.Record) {
	h.TUS = r.TUS
	d.out = append(d.out, h)
	d.lines = append(d.lines, r.N)
}

func (d *derivedHistory) request(r *wire.Record, x *exchange) {
	d.used[r.Conn] = true
	client := d.edge.client(x)
	if x.resume != "" {
		req := x.stream
		d.add(r, history.Record{Kind: history.KindReconnect, Client: client, Call: d.callName(x.session, req), Session: x.session,
			RequestID: req, LastEventID: mcp.EventNumber(x.resume)})
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		if (m.Method == mcp.MethodTasksGet || m.Method == mcp.MethodTasksResult) && m.IsRequest() && m.TaskID != "" {
			d.fetches[StreamKey{Session: x.session, RequestID: m.ID}] = m.TaskID
		}
		if m.Method == mcp.MethodCancelled && m.RequestID != "" {
			d.cancelled(r, x.session, m.RequestID)
		}
		if m.Method != mcp.MethodToolsCall || !m.IsRequest() {
			continue
		}
		op, proven := d.ops.keyOf(m.Tool, m.Args, m.ArgsDigest)
		n := d.requests[client+"\x00"+op] + 1
		d.requests[client+"\x00"+op] = n
		call := op
		switch {
		case !proven:
			call = fmt.Sprintf("%s/%d", op, n)
			d.undistinguished[op] = true
			if n == 2 {
				d.repeated++
			}
		case n == 2:
			d.merged++
		}
		c := &edgeCall{client: client, call: call, order: op, tool: m.Tool, key: StreamKey{Session: x.session, RequestID: m.ID}, attempt: 1}
		if prev := d.byOp[client+"\x00"+call]; prev != nil {
			c.attempt = prev.attempt + 1
		}
		d.byOp[client+"\x00"+call], d.callOf[c.key] = c, c
		d.streams[x.Key] = m.ID // broken if its connection ends before the response
		d.add(r, history.Record{Kind: history.KindInvoke, Client: client, Call: call, OrderID: op, Tool: m.Tool,
			Session: x.session, RequestID: m.ID, Attempt: c.attempt})
	}
}

// callName is the call a stream belongs to, or "" when no tools/call of it
// crossed the edge.
func (d *derivedHistory) callName(session, req string) string {
	if c := d.callOf[StreamKey{Session: session, RequestID: req}]; c != nil {
		return c.call
	}
	return ""
}

func (d *derivedHistory) response(r *wire.Record, x *exchange) {
	client := d.edge.client(x)
	if r.Status < 300 {
		d.past[cmp.Or(client, x.init)] = true
	}
	if id, ok := d.edge.opened(r, x); ok {
		protocol := ""
		for _, m := range r.Messages {
			protocol = cmp.Or(protocol, m.Protocol)
		}
		d.add(r, history.Record{Kind: history.KindSessionNew, Client: x.init, Session: id, Protocol: protocol})
	}
	if x.resume != "" {
		d.resumed(r, x, client)
	}
	if r.Status == http.StatusNotFound && x.session != "" && !d.lost[x.session] {
		d.lost[x.session] = true
		d.add(r, history.Record{Kind: history.KindSessionLost, Client: client, Session: x.session, Reason: "status_404"})
		d.tell(x.session, "")
	}
	k := x.Key
	if r.Status >= 500 && x.stream != "" {
		d.streams[k] = x.stream
		d.breakStream(r, k, "status_"+strconv.Itoa(r.Status), "answered "+strconv.Itoa(r.Status)+" in place of the call's answer")
	}
	if r.Status >= 400 || !x.SSE || x.stream == "" {
		delete(d.streams, k) // answered: a JSON body, or an error, came whole
	} else {
		d.streams[k] = x.stream
	}
	if r.Status >= 400 {
		return
	}
	for i := range r.Messages {
		d.answer(r, x, &r.Messages[i], 0)
	}
}

// resumed records what a GET with Last-Event-ID was answered.
func (d *derivedHistory) resumed(r *wire.Record, x *exchange, client string) {
	call := d.callName(x.session, x.stream)
	switch {
	case r.Status/100 == 2:
		d.add(r, history.Record{Kind: history.KindResume, Client: client, Call: call, Session: x.session,
			RequestID: x.stream, LastEventID: mcp.EventNumber(x.resume)})
	case r.Status == http.StatusGone || r.Status == http.StatusConflict:
		var body struct {
			Last   *int64 `json:"last_event_id"`
			Resume *int64 `json:"resume_event_id"`
			Head   *int64 `json:"head_event_id"`
		}
		if json.Unmarshal([]byte(r.ErrorBody), &body) != nil || (body.Resume == nil && body.Head == nil) {
			return
		}
		from := mcp.EventNumber(x.resume)
		if body.Last != nil {
			from = *body.Last
		}
		to := *cmp.Or(body.Resume, body.Head)
		d.add(r, history.Record{Kind: history.KindGap, Client: client, Call: call, Session: x.session, RequestID: x.stream,
			FromEventID: from, ToEventID: to, Reason: "status_" + strconv.Itoa(r.Status)})
		d.tell(x.session, x.stream)
	}
}

// tell notes that the client was told the answers of a stream (or, with no
// request id, of a whole session) are lost.
func (d *derivedHistory) tell(session, req string) {
	for k, c := range d.callOf {
		if k.Session == session && (req == "" || k.RequestID == req) {
			c.told = true
		}
	}
}

// answer records a response message delivered to the client on exchange x,
// in the SSE event with id eventID (0 for a JSON body).
func (d *derivedHistory) answer(r *wire.Record, x *exchange, m *wire.Message, eventID int64) {
	if !m.Response {
		return
	}
	if id, ok := d.fetches[StreamKey{Session: x.session, RequestID: m.ID}]; ok {
		d.fetched(r, x, m, id, eventID)
		return
	}
	c := d.callOf[StreamKey{Session: x.session, RequestID: m.ID}]
	if c == nil || c.answered || c.task != "" {
		return
	}
	if taskHandle(m) {
		c.task = m.TaskID
		d.tasks[m.TaskID] = c
		d.add(r, history.Record{Kind: history.KindTask, Client: c.client, Call: c.call, Session: x.session, RequestID: m.ID, Detail: m.TaskID})
		return
	}
	d.outcome(r, c, c.key.Session, m, eventID)
}

// cancelled records the client giving call req of session up: a break of
// its stream, and a fail it reached without reading any answer.
func (d *derivedHistory) cancelled(r *wire.Record, session, req string) {
	c := d.callOf[StreamKey{Session: session, RequestID: req}]
	if c == nil || c.answered {
		return
	}
	c.answered = true
	d.add(r, history.Record{Kind: history.KindStreamBreak, Client: c.client, Call: c.call, Session: session, RequestID: req,
		Reason: "cancelled", Detail: "the client sent notifications/cancelled"})
	d.add(r, history.Record{Kind: history.KindFail, Client: c.client, Call: c.call, OrderID: c.order, Session: session, RequestID: req,
		Result: history.ResultCancelled, Reason: "cancelled by the client"})
}

// fetched records what an answer to a tasks/get or tasks/result about task
// id hands out: the task's result (a completed tasks/get of the
// extension, or a tasks/result), or, for an error, the task lost.
func (d *derivedHistory) fetched(r *wire.Record, x *exchange, m *wire.Message, id string, eventID int64) {
	c := d.tasks[id]
	switch {
	case c == nil || c.answered:
		return
	case m.ErrorCode != 0:
		d.add(r, history.Record{Kind: history.KindStreamBreak, Client: c.client, Call: c.call, Session: c.key.Session, RequestID: c.key.RequestID,
			Reason: "task_lost", Detail: m.ErrorMessage})
		c.told = true
		return
	case m.TaskStatus != "" && (m.TaskStatus != mcp.TaskCompleted || m.ResultType != mcp.ResultComplete):
		return // a status, not yet (or not here) the result
	case m.TaskStatus == "" && m.TaskID != id:
		return
	}
	d.outcome(r, c, c.key.Session, m, eventID)
}

// outcome records the answer m to call c as its ok or fail.
func (d *derivedHistory) outcome(r *wire.Record, c *edgeCall, session string, m *wire.Message, eventID int64) {
	c.answered = true
	kind := history.KindOK
	if m.IsError {
		kind = history.KindFail
	}
	d.add(r, history.Record{Kind: kind, Client: c.client, Call: c.call, OrderID: c.order, Session: session, RequestID: c.key.RequestID,
		EventID: eventID, Result: history.ResultRead, Reason: m.ErrorMessage})
}

func (d *derivedHistory) event(r *wire.Record, x *exchange) {
	client := d.edge.client(x)
	if r.EventType == mcp.EventClose && x.session != "" && !d.lost[x.session] {
		d.lost[x.session] = true
		d.add(r, history.Record{Kind: history.KindSessionLost, Client: client, Session: x.session, Reason: "close_event"})
		d.tell(x.session, "")
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
			delete(d.streams, x.Key)
		case m.Method == mcp.MethodProgress:
			// Seq is the progress number when it is a whole one, as a
			// ledger that counts events 1, 2, 3 numbers them; the wire's
			// account places events by their ids instead (see place).
			seq := int64(0)
			if p := m.Progress; p != nil && *p >= 1 && *p == math.Trunc(*p) && *p <= math.MaxInt32 {
				seq = int64(*p)
			}
			if c := d.callOf[StreamKey{Session: x.session, RequestID: owner}]; c != nil && c.answered {
				d.late++
			}
			d.add(r, history.Record{Kind: history.KindEvent, Client: client, Call: d.callName(x.session, owner), Session: x.session,
				RequestID: owner, EventID: id, Seq: seq, Detail: m.Method})
		}
	}
	d.edge.noteEvent(x, r.EventID, owner)
}

// ended records a break for a stream that ended, cleanly, before its
// call's response came: to an MCP client that is a stream that broke (a
// server draining for a restart ends its streams so).
func (d *derivedHistory) ended(r *wire.Record) {
	k := r.ExchangeKey()
	if _, open := d.streams[k]; open {
		d.breakStream(r, k, "eof", "the stream ended before its response")
	}
}

// closed records a break for every stream the connection carried
// unfinished.
func (d *derivedHistory) closed(r *wire.Record) {
	keys := slices.SortedFunc(func(yield func(wire.ExchangeKey) bool) {
		for k := range d.streams {
			if k.Conn == r.Conn && !yield(k) {
				return
			}
		}
	}, func(a, b wire.ExchangeKey) int { return cmp.Compare(a.X, b.X) })
	reason := "error"
	switch r.End {
	case wire.EndRST:
		reason = "reset"
	case wire.EndFIN:
		reason = "eof"
	case wire.EndTimeout:
		reason = "timeout"
	}
	for _, k := range keys {
		d.breakStream(r, k, reason, string(r.End)+" by the "+string(r.By))
	}
	if !d.used[r.Conn] && r.By == wire.SideServer && (r.End == wire.EndRST || r.End == wire.EndError) {
		d.cutEmpty(r, reason)
	}
}

// cutEmpty records a connection the client opened and the proxy's side
// cut before any request crossed it (an upstream it could not dial, a
// reset): the client's process saw a request of its fail, though which
// call, and which logical client's, the wire cannot say. It is a break of
// no call, named for every client that has made a call or had a request
// answered (as a client's death is). Before any request of a client was
// answered it is none: what a client sends first is its initialize (or,
// at 2026-07-28, server/discover), so the request cut is no call, and a
// client that dies of it died at connect.
func (d *derivedHistory) cutEmpty(r *wire.Record, reason string) {
	clients := maps.Clone(d.past)
	for _, c := range d.byOp {
		clients[c.client] = true
	}
	for _, client := range slices.Sorted(maps.Keys(clients)) {
		d.add(r, history.Record{Kind: history.KindStreamBreak, Client: client, Reason: reason,
			Detail: "a connection of the client's process was cut before any request crossed it: " + cmp.Or(r.Detail, string(r.End)+" by the "+string(r.By))})
	}
}

// breakStream records the break of the unfinished stream of exchange k.
func (d *derivedHistory) breakStream(r *wire.Record, k wire.ExchangeKey, reason, detail string) {
	req := d.streams[k]
	delete(d.streams, k)
	x := d.edge.exchanges[k]
	d.add(r, history.Record{Kind: history.KindStreamBreak, Client: d.edge.client(x), Call: d.callName(x.session, req),
		Session: x.session, RequestID: req, Reason: reason, Detail: detail})
}

// settle records, at the end of the edge, an unknown outcome for every
// call whose last attempt got no answer and whose client was told its
// answer is lost.
func (d *derivedHistory) settle(last *wire.Record) {
	ops := slices.Sorted(func(yield func(string) bool) {
		for k := range d.byOp {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range ops {
		c := d.byOp[k]
		if c.answered || !c.told {
			continue
		}
		d.add(last, history.Record{Kind: history.KindUnknown, Client: c.client, Call: c.call, OrderID: c.order,
			Session: c.key.Session, RequestID: c.key.RequestID, Reason: "the server said its answer is lost"})
	}
}

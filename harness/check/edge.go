package check

import (
	"cmp"
	"net/http"

	"github.com/chaosrun/chaosrun/sideeffects/wire"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// edgeReader follows the HTTP exchanges of one edge of the wire and ties
// each record to the MCP session and call it is about: the session by its
// Mcp-Session-Id (and the client an initialize named for it), a progress
// event by its token (a tools/call's _meta.progressToken, or its id, which
// servers use when there is none), a response by its id, and an event of a
// GET resumed with Last-Event-ID by the call that event id belonged to when
// the edge first carried it.
type edgeReader struct {
	exchanges map[exchangeKey]*exchange
	clientOf  map[string]string            // session to client
	tokens    map[string]map[string]string // session to progress token to request id
	streamOf  map[string]map[string]string // session to event id to request id
}

type exchangeKey struct {
	conn, x int64
}

// exchange is one HTTP request on an edge and what it is about.
type exchange struct {
	method  string
	session string
	init    string   // the client name of an initialize request
	client  string   // the client a request names in its _meta (2026-07-28)
	calls   []string // request ids of the tools/call requests in the body
	stream  string   // the request id whose stream the response carries
	resume  string   // a GET's Last-Event-ID
	n       int64    // the request's wire record
}

func newEdgeReader() *edgeReader {
	return &edgeReader{exchanges: map[exchangeKey]*exchange{}, clientOf: map[string]string{},
		tokens: map[string]map[string]string{}, streamOf: map[string]map[string]string{}}
}

// request registers the exchange of a request record, with its tools/call
// messages' progress tokens.
func (e *edgeReader) request(r *wire.Record) *exchange {
	x := &exchange{method: r.Method, n: r.N}
	if r.Header != nil {
		x.session = r.Header.SessionID
		if r.Method == http.MethodGet {
			x.resume = r.Header.LastEventID
		}
	}
	e.exchanges[exchangeKey{r.Conn, r.Exchange}] = x
	if x.resume != "" {
		x.stream = e.streamOf[x.session][x.resume]
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		x.client = cmp.Or(x.client, m.ClientName)
		switch {
		case m.Method == mcpwire.MethodInitialize && m.IsRequest():
			x.init = m.ClientName
		case m.Method == mcpwire.MethodToolsCall && m.IsRequest():
			x.calls = append(x.calls, m.ID)
			if e.tokens[x.session] == nil {
				e.tokens[x.session] = map[string]string{}
			}
			e.tokens[x.session][cmp.Or(m.ProgressToken, m.ID)] = m.ID
		}
	}
	if x.stream == "" && len(x.calls) > 0 {
		x.stream = x.calls[0]
	}
	return x
}

// exchange returns the exchange a response, event or end belongs to, or nil.
func (e *edgeReader) exchange(r *wire.Record) *exchange {
	return e.exchanges[exchangeKey{r.Conn, r.Exchange}]
}

// opened returns the session a 2xx answer to an initialize opened, the
// first time the edge carries it.
func (e *edgeReader) opened(r *wire.Record, x *exchange) (string, bool) {
	if x.init == "" || r.Header == nil || r.Header.SessionID == "" || r.Status >= 300 {
		return "", false
	}
	id := r.Header.SessionID
	if _, seen := e.clientOf[id]; seen {
		return "", false
	}
	e.clientOf[id] = x.init
	return id, true
}

// client is the logical client of an exchange: the one its session was
// opened for, or the one its request named.
func (e *edgeReader) client(x *exchange) string {
	return cmp.Or(e.clientOf[x.session], x.client)
}

// owner returns the request id a message of an event on exchange x belongs
// to: a response's own id, a progress notification's by its token, else
// the call whose stream the exchange carries.
func (e *edgeReader) owner(x *exchange, m *wire.Message) string {
	switch {
	case m.Response:
		return m.ID
	case m.Method == mcpwire.MethodProgress:
		if req := e.tokens[x.session][m.ProgressToken]; req != "" {
			return req
		}
	}
	return x.stream
}

// noteEvent remembers which call an event id belongs to, for a later
// resume from it.
func (e *edgeReader) noteEvent(x *exchange, eventID, owner string) {
	if eventID == "" || owner == "" {
		return
	}
	if e.streamOf[x.session] == nil {
		e.streamOf[x.session] = map[string]string{}
	}
	if _, seen := e.streamOf[x.session][eventID]; !seen {
		e.streamOf[x.session][eventID] = owner
	}
}

// streamLabel names the kind of stream an exchange carries, as ledger
// records do.
func streamLabel(x *exchange) string {
	if x.method == http.MethodGet {
		return "get"
	}
	return "post"
}

// inExchangeOrder returns recs with every record of an exchange (response,
// events, body end) after the request that opened it. The observer records
// the two directions of a connection from two goroutines; the response's
// waits for the request's record at most 10 ms (faults/observer's
// pairWait), so as never to hold a server's bytes back longer, and on a
// saturated machine the request's goroutine can take longer than that to
// record what it has already passed on (14 ms in one loaded run: the answer
// to a resume came first). Such records are held back and placed right
// after their request; every other record keeps its place. recs itself is
// returned when nothing is out of order.
func inExchangeOrder(recs []wire.Record) []wire.Record {
	type key struct {
		edge    wire.Edge
		conn, x int64
	}
	opened := map[key]bool{}
	early := false
	for i := range recs {
		r := &recs[i]
		if r.Exchange == 0 {
			continue
		}
		k := key{r.Edge, r.Conn, r.Exchange}
		if r.Kind == wire.KindRequest {
			opened[k] = true
		} else if !opened[k] {
			early = true
			break
		}
	}
	if !early {
		return recs
	}
	clear(opened)
	out := make([]wire.Record, 0, len(recs))
	pending := map[key][]wire.Record{}
	var order []key
	for _, r := range recs {
		k := key{r.Edge, r.Conn, r.Exchange}
		switch {
		case r.Exchange == 0 || opened[k]:
			out = append(out, r)
		case r.Kind == wire.KindRequest:
			opened[k] = true
			out = append(append(out, r), pending[k]...)
			delete(pending, k)
		default:
			if pending[k] == nil {
				order = append(order, k)
			}
			pending[k] = append(pending[k], r)
		}
	}
	for _, k := range order { // an exchange whose request was never recorded
		out = append(out, pending[k]...)
	}
	return out
}

// taskHandle reports whether a response message hands the call over to a
// task (its result comes later, by tasks/get or tasks/result): its result
// type says so, or, where it names none, it carries a task id and status
// and no error.
func taskHandle(m *wire.Message) bool {
	return m.ResultType == mcpwire.ResultTask || m.ResultType == "" && m.TaskID != "" && m.TaskStatus != "" && m.ErrorCode == 0
}

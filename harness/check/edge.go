package check

import (
	"cmp"
	"net/http"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// edgeReader follows the HTTP exchanges of one edge of the wire (paired by
// wire.Exchanges) and ties each record to the MCP session and call it is
// about: the session by its Mcp-Session-Id (and the client an initialize
// named for it), a progress event by its token (a tools/call's
// _meta.progressToken, or its id, which servers use when there is none), a
// response by its id, and an event of a GET resumed with Last-Event-ID by
// the call that event id belonged to when the edge first carried it.
type edgeReader struct {
	pairs     wire.Exchanges
	exchanges map[wire.ExchangeKey]*exchange
	clientOf  map[string]string            // session to client
	tokens    map[string]map[string]string // session to progress token to request id
	streamOf  map[string]map[string]string // session to event id to request id
}

// exchange is one HTTP exchange on an edge (its request, answer and end,
// as wire.Exchanges pairs them) and what it is about.
type exchange struct {
	*wire.Exchange
	session string
	init    string   // the client name of an initialize request
	client  string   // the client a request names in its _meta (2026-07-28)
	calls   []string // request ids of the tools/call requests in the body
	stream  string   // the request id whose stream the response carries
	resume  string   // a GET's Last-Event-ID
}

func newEdgeReader() *edgeReader {
	return &edgeReader{exchanges: map[wire.ExchangeKey]*exchange{}, clientOf: map[string]string{},
		tokens: map[string]map[string]string{}, streamOf: map[string]map[string]string{}}
}

// observe follows record r of the edge and returns the exchange it belongs
// to, registering it at its request; nil for a record of no exchange, or of
// one whose request was never recorded.
func (e *edgeReader) observe(r *wire.Record) *exchange {
	wx := e.pairs.Observe(r)
	switch {
	case wx == nil || !wx.Requested:
		return nil
	case r.Kind == wire.KindRequest:
		return e.request(r, wx)
	}
	return e.exchanges[wx.Key]
}

// request registers exchange wx at its request record, with its tools/call
// messages' progress tokens.
func (e *edgeReader) request(r *wire.Record, wx *wire.Exchange) *exchange {
	x := &exchange{Exchange: wx}
	if r.Header != nil {
		x.session = r.Header.SessionID
		if r.Method == http.MethodGet {
			x.resume = r.Header.LastEventID
		}
	}
	e.exchanges[wx.Key] = x
	if x.resume != "" {
		x.stream = e.streamOf[x.session][x.resume]
	}
	for i := range r.Messages {
		m := &r.Messages[i]
		x.client = cmp.Or(x.client, m.ClientName)
		switch {
		case m.Method == mcp.MethodInitialize && m.IsRequest():
			x.init = m.ClientName
		case m.Method == mcp.MethodToolsCall && m.IsRequest():
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
	case m.Method == mcp.MethodProgress:
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
	if x.Method == http.MethodGet {
		return "get"
	}
	return "post"
}

// inExchangeOrder returns recs with every record of an exchange (response,
// events, body end) after the request that opened it. The observer records
// the two directions of a connection from two goroutines; the response's
// waits for the request's record at most 10 ms (wire/observer's
// pairWait), so as never to hold a server's bytes back longer, and on a
// saturated machine the request's goroutine can take longer than that to
// record what it has already passed on (14 ms in one loaded run: the answer
// to a resume came first). Such records are held back and placed right
// after their request; every other record keeps its place. recs itself is
// returned when nothing is out of order.
func inExchangeOrder(recs []wire.Record) []wire.Record {
	opened := map[wire.ExchangeKey]bool{}
	early := false
	for i := range recs {
		r := &recs[i]
		if r.Exchange == 0 {
			continue
		}
		k := r.ExchangeKey()
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
	pending := map[wire.ExchangeKey][]wire.Record{}
	var order []wire.ExchangeKey
	for _, r := range recs {
		k := r.ExchangeKey()
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
	return m.ResultType == mcp.ResultTask || m.ResultType == "" && m.TaskID != "" && m.TaskStatus != "" && m.ErrorCode == 0
}

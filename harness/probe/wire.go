package probe

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Reading what a run recorded on the wire. Everything a probe measures is
// read here from wire.jsonl: the server's answers at the server edge (what
// left the server), and what the client sent and was delivered at the
// client edge.

// exchange is one HTTP exchange on one edge: its request, its response,
// the SSE events of its body, and how its connection ended.
type exchange struct {
	edge   wire.Edge
	conn   int64
	x      int64
	req    *wire.Record
	resp   *wire.Record
	events []*wire.Record
	end    *wire.Record // body_end
	closed *wire.Record // the connection's close
}

// session is the Mcp-Session-Id the exchange belongs to.
func (e *exchange) session() string {
	for _, r := range []*wire.Record{e.req, e.resp} {
		if r != nil && r.Header != nil && r.Header.SessionID != "" {
			return r.Header.SessionID
		}
	}
	return ""
}

func (e *exchange) method() string {
	if e.req == nil {
		return ""
	}
	return e.req.Method
}

func (e *exchange) status() int {
	if e.resp == nil {
		return 0
	}
	return e.resp.Status
}

func (e *exchange) lastEventID() string {
	if e.req == nil || e.req.Header == nil {
		return ""
	}
	return e.req.Header.LastEventID
}

func (e *exchange) protocolHeader() string {
	if e.req == nil || e.req.Header == nil {
		return ""
	}
	return e.req.Header.ProtocolVersion
}

func (e *exchange) startUS() int64 {
	if e.req == nil {
		return 0
	}
	return e.req.TUS
}

// messages lists the JSON-RPC messages of the request, the response and
// the events.
func (e *exchange) requestMessages() []wire.Message {
	if e.req == nil {
		return nil
	}
	return e.req.Messages
}

// toolCall returns the exchange's tools/call of tool ("" any), if any.
func (e *exchange) toolCall(tool string) (wire.Message, bool) {
	for _, m := range e.requestMessages() {
		if m.Method == mcp.MethodToolsCall && m.IsRequest() && (tool == "" || m.Tool == tool) {
			return m, true
		}
	}
	return wire.Message{}, false
}

// isResume reports whether the exchange is a GET carrying Last-Event-ID.
func (e *exchange) isResume() bool { return e.method() == http.MethodGet && e.lastEventID() != "" }

// torn reports whether the exchange's connection ended without an answer.
func (e *exchange) torn() bool { return e.resp == nil && e.closed != nil }

// answer says in a few words how the server answered the exchange.
func (e *exchange) answer() string {
	switch {
	case e.resp == nil && e.closed != nil:
		return fmt.Sprintf("the connection was torn down (%s by the %s) with no answer", e.closed.End, e.closed.By)
	case e.resp == nil:
		return "no answer recorded"
	}
	s := fmt.Sprintf("%d %s", e.resp.Status, http.StatusText(e.resp.Status))
	if b := strings.TrimSpace(e.resp.ErrorBody); b != "" {
		s += " " + shorten(b, 160)
	}
	return s
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// edgeView holds one edge's exchanges, in the order their requests crossed.
type edgeView struct {
	exchanges []*exchange
}

// view indexes the records of one edge.
func view(recs []wire.Record, edge wire.Edge) *edgeView {
	byKey := map[[2]int64]*exchange{}
	closes := map[int64]*wire.Record{}
	var order []*exchange
	for i := range recs {
		r := &recs[i]
		if r.Edge != edge {
			continue
		}
		if r.Kind == wire.KindClose {
			closes[r.Conn] = r
			continue
		}
		if r.Exchange == 0 {
			continue
		}
		k := [2]int64{r.Conn, r.Exchange}
		x := byKey[k]
		if x == nil {
			x = &exchange{edge: edge, conn: r.Conn, x: r.Exchange}
			byKey[k] = x
			order = append(order, x)
		}
		switch r.Kind {
		case wire.KindRequest:
			x.req = r
		case wire.KindResponse:
			x.resp = r
		case wire.KindEvent:
			x.events = append(x.events, r)
		case wire.KindBodyEnd:
			x.end = r
		}
	}
	for _, x := range order {
		x.closed = closes[x.conn]
	}
	order = slices.DeleteFunc(order, func(x *exchange) bool { return x.req == nil })
	slices.SortStableFunc(order, func(a, b *exchange) int { return cmp.Compare(a.req.N, b.req.N) })
	return &edgeView{exchanges: order}
}

// firstCall returns the first exchange carrying a tools/call of tool.
func (v *edgeView) firstCall(tool string) (*exchange, wire.Message) {
	for _, x := range v.exchanges {
		if m, ok := x.toolCall(tool); ok {
			return x, m
		}
	}
	return nil, wire.Message{}
}

// calls returns every exchange carrying a tools/call of tool.
func (v *edgeView) calls(tool string) []*exchange {
	var out []*exchange
	for _, x := range v.exchanges {
		if _, ok := x.toolCall(tool); ok {
			out = append(out, x)
		}
	}
	return out
}

// after returns the exchanges of session whose requests crossed after x's,
// keeping those keep accepts.
func (v *edgeView) after(x *exchange, session string, keep func(*exchange) bool) []*exchange {
	var out []*exchange
	for _, y := range v.exchanges {
		if y.req.N > x.req.N && (session == "" || y.session() == session) && keep(y) {
			out = append(out, y)
		}
	}
	return out
}

// sessionEvents returns every event record of the session's exchanges.
func (v *edgeView) sessionEvents(session string) []*wire.Record {
	var out []*wire.Record
	for _, x := range v.exchanges {
		if x.session() == session {
			out = append(out, x.events...)
		}
	}
	return out
}

// negotiated returns the protocol the server answered initialize with for
// the session, or "" when no initialize answer crossed.
func (v *edgeView) negotiated(session string) string {
	for _, x := range v.exchanges {
		for _, m := range x.requestMessages() {
			if m.Method != mcp.MethodInitialize || x.resp == nil || x.session() != session {
				continue
			}
			for _, r := range append([]*wire.Record{x.resp}, x.events...) {
				for _, a := range r.Messages {
					if a.Response && a.Protocol != "" {
						return a.Protocol
					}
				}
			}
		}
	}
	return ""
}

// progressOf returns the progress number an event carries for token, if
// any.
func progressOf(r *wire.Record, token string) (int64, bool) {
	for _, m := range r.Messages {
		if m.Method == mcp.MethodProgress && m.Progress != nil && (token == "" || m.ProgressToken == token) {
			return int64(*m.Progress), true
		}
	}
	return 0, false
}

// totalOf returns the progress total an event carries, if any.
func totalOf(r *wire.Record) (int64, bool) {
	for _, m := range r.Messages {
		if m.Method == mcp.MethodProgress && m.Total != nil {
			return int64(*m.Total), true
		}
	}
	return 0, false
}

// carriesResult reports whether the record carries the response to id.
func carriesResult(r *wire.Record, id string) bool {
	for _, m := range r.Messages {
		if m.Response && m.ID == id {
			return true
		}
	}
	return false
}

// resultIsError reports whether the response to id in r is an error.
func resultIsError(r *wire.Record, id string) bool {
	for _, m := range r.Messages {
		if m.Response && m.ID == id {
			return m.IsError
		}
	}
	return false
}

// token is the progress token a tools/call's progress carries: its
// _meta.progressToken, else its id (servers that send progress regardless
// use it).
func token(m wire.Message) string { return cmp.Or(m.ProgressToken, m.ID) }

package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// serverInfo names the server in initialize results.
var serverInfo = mcp.Implementation{Name: "chaosrun-reference", Version: "1"}

// initialize creates a session for an initialize request and answers it on
// a stream of the new session.
func (s *Server) initialize(w http.ResponseWriter, r *http.Request, kind store.StreamKind, m *mcp.Message, batch bool, n int) {
	if _, ok := headerVersion(r.Header); !ok {
		writeError(w, http.StatusBadRequest, errBadProtocolVersion, "MCP-Protocol-Version must be one of "+versionList())
		return
	}
	if batch || n > 1 {
		writeError(w, http.StatusBadRequest, errInitializeBatch, "initialize must be sent alone")
		return
	}
	if len(r.Header.Values(mcp.HeaderSessionID)) > 0 {
		writeError(w, http.StatusBadRequest, errInitializeSession, "initialize must not carry Mcp-Session-Id")
		return
	}
	var p mcp.InitializeParams
	if err := json.Unmarshal(m.Params, &p); err != nil || len(m.Params) == 0 {
		writeRPCError(w, http.StatusBadRequest, m.ID, mcp.CodeInvalidParams, "initialize needs params with protocolVersion and clientInfo")
		return
	}
	version := p.ProtocolVersion
	if !mcp.SupportedVersion(version) {
		version = mcp.LatestVersion
	}
	sess, err := s.openSession(version, p.ClientInfo.Name)
	if err != nil {
		s.storeFailure(w, err)
		return
	}
	defer s.leave(sess)
	w.Header().Set(mcp.HeaderSessionID, sess.id)
	s.dispatch(w, r, sess, kind, []mcp.Message{*m}, false)
}

// call is one request of a POST, from its arrival to its response.
type call struct {
	sess    *session
	stream  store.StreamID
	kind    store.StreamKind
	id      json.RawMessage
	key     string
	method  string
	tool    string          // a known tool's name, for tools/call
	args    json.RawMessage // the tool's arguments
	token   json.RawMessage // _meta.progressToken
	orderID string
	ran     bool // the tool ran: its result is recorded in the ledger
	// task is the params.task of a task-augmented tools/call (2025-11-25),
	// params the request's params (read by the tasks/* methods), and fetch
	// the task's call whose result a tasks/result response carries: it is
	// recorded in the ledger as that call's result, on stream task:<id>.
	task   *mcp.TaskParams
	params json.RawMessage
	fetch  *tools.Call
}

// dispatch handles the messages of a POST on an existing session: it
// answers notifications and responses with 202, and opens a stream for
// requests, answered as SSE or JSON.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request, sess *session, kind store.StreamKind, msgs []mcp.Message, batch bool) {
	var calls []*call
	var notes []mcp.Message
	for _, m := range msgs {
		switch {
		case m.IsRequest():
			calls = append(calls, newCall(sess, kind, m))
		case m.IsNotification():
			notes = append(notes, m)
		}
	}
	if len(calls) == 0 {
		for _, n := range notes {
			s.notify(sess, n)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	keys := make([]string, len(calls))
	reqs := make([]store.Request, len(calls))
	for i, c := range calls {
		keys[i] = c.key
		reqs[i] = store.Request{ID: c.id, Method: c.method, Tool: c.tool, OrderID: c.orderID}
	}
	if dup, ok := sess.claim(keys); !ok {
		writeRPCError(w, http.StatusBadRequest, calls[dup].id, mcp.CodeInvalidRequest, "request id "+calls[dup].key+" is already in flight on this session")
		return
	}
	st, err := sess.log.OpenStream(kind, reqs)
	if err != nil {
		for _, k := range keys {
			sess.retire(k)
		}
		s.storeFailure(w, err)
		return
	}
	for _, c := range calls {
		c.stream = st
	}
	for _, n := range notes {
		s.notify(sess, n)
	}
	if kind == store.KindJSON {
		s.serveJSON(w, r, sess, st, calls, batch)
		return
	}
	s.serveSSE(w, r, sess, st, calls)
}

func (s *Server) storeFailure(w http.ResponseWriter, err error) {
	if errors.Is(err, store.ErrSessionClosed) {
		writeError(w, http.StatusNotFound, errSessionNotFound, "no such session")
		return
	}
	if errors.Is(err, store.ErrStoreClosed) {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown, "the server is shutting down")
		return
	}
	s.log.Warn("event store", "err", err)
	writeError(w, http.StatusInternalServerError, errInternal, err.Error())
}

func newCall(sess *session, kind store.StreamKind, m mcp.Message) *call {
	c := &call{sess: sess, kind: kind, id: m.ID, key: m.IDString(), method: m.Method, params: m.Params}
	if m.Method != mcp.MethodToolsCall {
		return c
	}
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Task      *mcp.TaskParams `json:"task"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	if json.Unmarshal(m.Params, &p) != nil || !tools.Known(p.Name) {
		return c
	}
	c.tool, c.args, c.token, c.task = p.Name, p.Arguments, p.Meta.ProgressToken, p.Task
	c.orderID = tools.OrderID(p.Arguments)
	return c
}

// serveSSE answers a POST's requests on a text/event-stream response that
// ends once every request has its response.
func (s *Server) serveSSE(w http.ResponseWriter, r *http.Request, sess *session, st store.StreamID, calls []*call) {
	a, res := sess.attach(r.Context(), st, http.NewResponseController(w))
	if res != attached {
		writeError(w, http.StatusNotFound, errSessionNotFound, "no such session")
		return
	}
	defer sess.detach(st, a)
	if sess.version == mcp.Version20251125 {
		if _, err := sess.log.Append(st, nil, "", nil); err != nil {
			s.storeFailure(w, err)
			return
		}
	}
	for _, c := range calls {
		s.start(c)
	}
	writeSSEHeaders(w)
	s.pump(w, r, sess, st, a, 0)
}

// serveJSON answers a POST's requests with one application/json response
// once all of them are answered.
func (s *Server) serveJSON(w http.ResponseWriter, r *http.Request, sess *session, st store.StreamID, calls []*call, batch bool) {
	wt := sess.addWaiter(st, len(calls))
	defer sess.removeWaiter(st)
	for _, c := range calls {
		s.start(c)
	}
	select {
	case <-wt.ready:
	case <-r.Context().Done():
		wt.abandon("connection_closed")
		return
	case <-sess.done:
		wt.abandon("session_gone")
		writeError(w, http.StatusNotFound, errSessionNotFound, "the session ended")
		return
	}
	out := wt.responses()
	switch {
	case len(out) == 0:
		w.WriteHeader(http.StatusAccepted)
	case len(out) == 1 && !batch:
		writeJSON(w, http.StatusOK, out[0])
	default:
		writeJSON(w, http.StatusOK, out)
	}
}

// notify handles a client notification. Only cancellation has an effect.
func (s *Server) notify(sess *session, n mcp.Message) {
	if n.Method != mcp.MethodCancelled {
		return
	}
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(n.Params, &p) != nil || len(p.RequestID) == 0 {
		return
	}
	key := mcp.IDString(p.RequestID)
	if sess.cancel(key) {
		s.log.Info("call cancelled by the client", "session", sess.id, "request", key)
	}
}

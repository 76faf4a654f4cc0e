package server

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// anonymousClient names the ledger's client for a 2026-07-28 request whose
// _meta carries no clientInfo.
const anonymousClient = "anonymous"

// modernCall is a tools/call at 2026-07-28, from its POST to its response.
// It has no session and no event log: its response stream is the
// connection, and closing the connection cancels it.
type modernCall struct {
	id   json.RawMessage
	lc   tools.Call
	args json.RawMessage
	box  *outbox
}

// serveModernCall runs a tool for a 2026-07-28 POST and answers on an SSE
// stream (progress, then the result) or, when the client accepts only
// JSON, with the result alone. The tool's life is the server's; the
// request's cancellation is the connection's: a stream that closes before
// its result is a cancelled call (call_cancelled), and the tool does what
// Config.OnCancel says.
func (s *Server) serveModernCall(w http.ResponseWriter, r *http.Request, sseOK bool, m mcp.Message, f mcp.RequestFields) {
	var p struct {
		Arguments json.RawMessage `json:"arguments"`
	}
	if json.Unmarshal(m.Params, &p) != nil || !tools.Known(f.Name) {
		writeRPCError(w, http.StatusOK, m.ID, mcp.CodeInvalidParams, "unknown tool or malformed tools/call params")
		return
	}
	client := anonymousClient
	if ci := f.Meta.ClientInfo; ci != nil && ci.Name != "" {
		client = ci.Name
	}
	c := &modernCall{
		id:   m.ID,
		lc:   tools.Call{Tool: f.Name, OrderID: tools.OrderID(p.Arguments), Client: client, RequestID: m.IDString()},
		args: p.Arguments,
		box:  newOutbox(),
	}
	if s.cfg.Tasks == TasksExtension && wantsTasks(f) {
		s.createTask(w, m, c.lc, c.args)
		return
	}
	token := f.Meta.ProgressToken
	if len(token) == 0 || string(token) == "null" {
		token = m.ID
	}
	s.pumps.add()
	defer s.pumps.done()
	s.launchModern(r.Context().Done(), c, token, sseOK)
	if sseOK {
		s.streamModern(w, r, c)
	} else {
		s.answerModern(w, r, c)
	}
}

// launchModern runs c's tool on its own goroutine. cancelled is the
// request's end.
func (s *Server) launchModern(cancelled <-chan struct{}, c *modernCall, token json.RawMessage, sseOK bool) {
	ctx, cancel := context.WithCancelCause(s.toolCtx)
	emit := func(seq, total int, recordEmitted func(string, int64)) error {
		if !sseOK {
			return nil // a JSON answer cannot carry progress
		}
		data, err := progress(token, seq, total)
		if err != nil {
			return err
		}
		c.box.push(data, func() { recordEmitted("", 0) })
		return nil
	}
	s.calls.add()
	go func() {
		defer s.calls.done()
		defer cancel(nil)
		out := s.tools.RunRequest(ctx, cancelled, c.lc, c.args, emit)
		s.settleModern(c, out)
	}()
}

// settleModern hands a finished tool's outcome to the connection, or
// accounts for it when there is no connection to take it.
func (s *Server) settleModern(c *modernCall, out tools.Outcome) {
	switch {
	case out.Interrupted:
		s.record(c.lc.Finished(tools.Outcome{Reason: "shutdown"}))
	case out.Cancelled:
		s.record(c.lc.Finished(out))
	default:
		data, err := json.Marshal(modernMessage(c.id, out))
		if err != nil {
			s.log.Warn("encoding a response", "request", c.lc.RequestID, "err", err)
			return
		}
		if !c.box.finish(data, out) {
			// The stream closed (the call was cancelled) and the tool
			// finished anyway: the result goes nowhere, as the
			// specification asks of a cancelled request.
			s.record(c.lc.ResultDropped(out.IsError, "cancelled"))
			if out.Reason == "" {
				out.Reason = "result_dropped"
			}
			s.record(c.lc.Finished(out))
		}
	}
}

// deliver records the final result as written and returns it, once the
// connection has taken it.
func (s *Server) deliver(c *modernCall, data []byte, out tools.Outcome) []byte {
	s.record(c.lc.ResultWritten("", 0, out.IsError))
	return data
}

// closeModern accounts for a connection that ends without writing a result
// the tool had already handed over.
func (s *Server) closeModern(c *modernCall, reason string) {
	if out, pending := c.box.close(); pending {
		s.record(c.lc.ResultDropped(out.IsError, reason))
		if out.Reason == "" {
			out.Reason = "result_dropped"
		}
		s.record(c.lc.Finished(out))
	}
}

// streamModern writes c's progress and result on an SSE response without
// event ids (nothing is resumable at 2026-07-28), with keepalive comments.
// On shutdown it drains like a legacy stream; once the drain is over the
// connection closes, which is the call's cancellation.
func (s *Server) streamModern(w http.ResponseWriter, r *http.Request, c *modernCall) {
	reason := "connection_closed"
	defer func() { s.closeModern(c, reason) }()
	rc := http.NewResponseController(w)
	writeSSEHeaders(w)
	if rc.Flush() != nil {
		return
	}
	var keepalive <-chan time.Time
	if s.cfg.Keepalive > 0 {
		t := time.NewTicker(s.cfg.Keepalive)
		defer t.Stop()
		keepalive = t.C
	}
	for {
		notes, final, out, ok := c.box.take()
		for _, n := range notes {
			if mcp.WriteEvent(w, mcp.Event{Data: n.data}) != nil {
				return
			}
		}
		if ok {
			_ = mcp.WriteEvent(w, mcp.Event{Data: s.deliver(c, final, out)})
			_ = rc.Flush()
			s.record(c.lc.Finished(out))
			return
		}
		if len(notes) > 0 && rc.Flush() != nil {
			return
		}
		select {
		case <-c.box.ready:
		case <-keepalive:
			if mcp.WriteComment(w, "keepalive") != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-s.drained:
			reason = "shutdown"
			return
		}
	}
}

// answerModern waits for c's result and answers it as application/json.
func (s *Server) answerModern(w http.ResponseWriter, r *http.Request, c *modernCall) {
	reason := "connection_closed"
	defer func() { s.closeModern(c, reason) }()
	for {
		if _, final, out, ok := c.box.take(); ok {
			w.Header().Set("Content-Type", mcp.ContentTypeJSON)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(s.deliver(c, final, out))
			s.record(c.lc.Finished(out))
			return
		}
		select {
		case <-c.box.ready:
		case <-r.Context().Done():
			return
		case <-s.drained:
			reason = "shutdown"
			return
		}
	}
}

// modernMessage renders a tool's outcome as a 2026-07-28 response: the
// tools/call result with resultType "complete".
func modernMessage(id json.RawMessage, o tools.Outcome) mcp.Message {
	res, err := o.Result()
	if err != nil {
		return mcp.NewError(id, mcp.CodeInternalError, err.Error())
	}
	msg, err := mcp.NewResult(id, struct {
		mcp.CallResult
		ResultType string `json:"resultType"`
	}{res, mcp.ResultComplete})
	if err != nil {
		return mcp.NewError(id, mcp.CodeInternalError, err.Error())
	}
	return msg
}

// outbox passes a 2026-07-28 call's messages from its tool to its
// connection. Once closed (the connection is gone) it takes nothing more.
type outbox struct {
	mu     sync.Mutex
	notes  []note
	final  []byte
	out    tools.Outcome
	has    bool // final is set
	taken  bool // final was taken by the connection
	closed bool
	ready  chan struct{} // a token when something new is waiting
}

// note is a notification waiting for the connection.
type note struct{ data []byte }

func newOutbox() *outbox { return &outbox{ready: make(chan struct{}, 1)} }

func (b *outbox) signal() {
	select {
	case b.ready <- struct{}{}:
	default:
	}
}

// push queues a notification, recording it first; after close it is
// neither recorded nor sent (no message follows a cancellation).
func (b *outbox) push(data []byte, record func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	record()
	b.notes = append(b.notes, note{data: data})
	b.signal()
}

// finish hands over the result; false when the connection is gone.
func (b *outbox) finish(data []byte, out tools.Outcome) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.final, b.out, b.has = data, out, true
	b.signal()
	return true
}

// take returns the queued notifications and, once handed over, the result
// (ok), which it marks taken.
func (b *outbox) take() (notes []note, final []byte, out tools.Outcome, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	notes, b.notes = b.notes, nil
	if b.has && !b.taken {
		b.taken = true
		return notes, b.final, b.out, true
	}
	return notes, nil, tools.Outcome{}, false
}

// close ends the outbox; pending reports a result handed over but never
// taken.
func (b *outbox) close() (out tools.Outcome, pending bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return b.out, b.has && !b.taken
}

package server

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// start answers a request: at once for everything but tools/call, whose
// tool runs on its own goroutine.
func (s *Server) start(c *call) {
	switch c.method {
	case mcp.MethodInitialize:
		caps := json.RawMessage(`{"tools":{}}`)
		if s.legacyTasks(c.sess) {
			caps = json.RawMessage(`{"tools":{},"tasks":` + mcp.ServerTasksCapability + `}`)
		}
		s.answer(c, mcp.InitializeResult{
			ProtocolVersion: c.sess.version,
			Capabilities:    caps,
			ServerInfo:      serverInfo,
		})
	case mcp.MethodPing:
		s.answer(c, struct{}{})
	case mcp.MethodToolsList:
		if s.legacyTasks(c.sess) {
			s.answer(c, taskToolList)
			return
		}
		s.answer(c, toolList)
	case mcp.MethodToolsCall:
		switch {
		case c.tool == "":
			s.respond(c, mcp.NewError(c.id, mcp.CodeInvalidParams, "unknown tool or malformed tools/call params"), false)
		case c.task != nil && s.legacyTasks(c.sess):
			s.createLegacyTask(c)
		default:
			s.launch(c)
		}
	case mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksList, mcp.MethodTasksCancel:
		if !s.legacyTasks(c.sess) {
			s.respond(c, mcp.NewError(c.id, mcp.CodeMethodNotFound, "method not found: "+c.method+" (no tasks on this session)"), false)
			return
		}
		s.serveLegacyTaskMethod(c)
	default:
		s.respond(c, mcp.NewError(c.id, mcp.CodeMethodNotFound, "method not found: "+c.method), false)
	}
}

func (s *Server) answer(c *call, result any) {
	msg, err := mcp.NewResult(c.id, result)
	if err != nil {
		msg = mcp.NewError(c.id, mcp.CodeInternalError, err.Error())
	}
	s.respond(c, msg, false)
}

// launch runs c's tool. The tool's context is the server's, not the
// request's: a dropped connection does not cancel it (disconnect is not
// cancel); notifications/cancelled, the shutdown deadline and Close do.
func (s *Server) launch(c *call) {
	ctx, cancel := context.WithCancelCause(s.toolCtx)
	c.ran = true
	c.sess.setCancel(c.key, cancel)
	s.calls.add()
	go func() {
		defer s.calls.done()
		defer cancel(nil)
		s.run(ctx, c)
	}()
}

func (s *Server) run(ctx context.Context, c *call) {
	out := s.tools.Run(ctx, c.ledgerCall(), c.args, s.emitter(c))
	if out.Interrupted {
		if errors.Is(context.Cause(ctx), errCancelled) {
			s.settleCancelled(c)
			s.record(c.ledgerCall().Finished(tools.Outcome{Reason: "cancelled"}))
			return
		}
		// The server is stopping: the call stays in flight in the store, and
		// a restarted file store resolves it as interrupted_by_restart.
		s.log.Info("call left unresolved", "session", c.sess.id, "request", c.key, "cause", context.Cause(ctx))
		return
	}
	if !s.respond(c, message(c.id, out), out.IsError) && out.Reason == "" {
		out.Reason = "result_dropped"
	}
	s.record(c.ledgerCall().Finished(out))
}

// respond writes the response to c's request on its stream, or hands it to
// the waiting JSON response, and retires the request. A tool's result is
// recorded in the ledger as written (before it is written, so no client can
// see a result the ledger lacks) or as dropped. It reports whether the
// response went anywhere.
func (s *Server) respond(c *call, msg mcp.Message, isError bool) bool {
	defer c.sess.retire(c.key)
	data, err := json.Marshal(msg)
	if err != nil {
		s.log.Warn("encoding a response", "session", c.sess.id, "request", c.key, "err", err)
		return false
	}
	if c.kind == store.KindJSON {
		return s.respondJSON(c, data, isError)
	}
	var before func(int64)
	if lc, stream, ok := c.resultCall(); ok {
		before = func(id int64) {
			s.record(lc.ResultWritten(stream, id, isError))
		}
	}
	_, err = c.sess.log.Append(c.stream, data, c.key, before)
	return s.delivered(c, err, isError)
}

func (s *Server) respondJSON(c *call, data json.RawMessage, isError bool) bool {
	if err := c.sess.log.Settle(c.stream, c.key); err != nil {
		return s.delivered(c, err, isError)
	}
	reason := "connection_closed"
	lc, stream, ok := c.resultCall()
	if wt := c.sess.waiter(c.stream); wt != nil {
		reason = wt.deliver(data, func() {
			if ok {
				s.record(lc.ResultWritten(stream, 0, isError))
			}
		})
	}
	if reason == "" {
		return true
	}
	if ok {
		s.record(lc.ResultDropped(isError, reason))
	}
	return false
}

// resultCall is the call whose result c's response carries, as the ledger
// records it, and the stream it is recorded on: the tool's own call, or
// for tasks/result the task's call on stream task:<id>. ok is false for a
// response that carries no tool result.
func (c *call) resultCall() (lc tools.Call, stream string, ok bool) {
	switch {
	case c.fetch != nil:
		return *c.fetch, "task:" + c.fetch.Task, true
	case c.ran:
		return c.ledgerCall(), c.stream.String(), true
	}
	return tools.Call{}, "", false
}

// delivered accounts for a failed write of c's response.
func (s *Server) delivered(c *call, err error, isError bool) bool {
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrSessionClosed):
		if lc, _, ok := c.resultCall(); ok {
			s.record(lc.ResultDropped(isError, "session_gone"))
		}
	default:
		s.log.Warn("response not written", "session", c.sess.id, "request", c.key, "err", err)
	}
	return false
}

// settleCancelled retires a cancelled request: no response is sent, as the
// specification asks.
func (s *Server) settleCancelled(c *call) {
	defer c.sess.retire(c.key)
	if err := c.sess.log.Settle(c.stream, c.key); err != nil && !errors.Is(err, store.ErrSessionClosed) {
		s.log.Warn("settling a cancelled call", "session", c.sess.id, "request", c.key, "err", err)
	}
	if c.kind == store.KindJSON {
		if wt := c.sess.waiter(c.stream); wt != nil {
			wt.deliver(nil, nil)
		}
	}
}

// jsonWaiter collects the responses of a POST answered as application/json.
type jsonWaiter struct {
	mu        sync.Mutex
	left      int
	out       []json.RawMessage
	abandoned string
	ready     chan struct{}
}

// deliver adds a response (nil for a cancelled request), calling onDeliver
// first. It returns why the response could not be delivered, or "".
func (wt *jsonWaiter) deliver(data json.RawMessage, onDeliver func()) string {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	if wt.abandoned != "" {
		return wt.abandoned
	}
	if onDeliver != nil {
		onDeliver()
	}
	if data != nil {
		wt.out = append(wt.out, data)
	}
	wt.left--
	if wt.left == 0 {
		close(wt.ready)
	}
	return ""
}

func (wt *jsonWaiter) abandon(reason string) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	wt.abandoned = reason
}

func (wt *jsonWaiter) responses() []json.RawMessage {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.out
}

func (sess *session) addWaiter(st store.StreamID, n int) *jsonWaiter {
	wt := &jsonWaiter{left: n, ready: make(chan struct{})}
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.waiters == nil {
		sess.waiters = map[store.StreamID]*jsonWaiter{}
	}
	sess.waiters[st] = wt
	return wt
}

func (sess *session) removeWaiter(st store.StreamID) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if wt := sess.waiters[st]; wt != nil {
		wt.abandon("connection_closed")
		delete(sess.waiters, st)
	}
}

func (sess *session) waiter(st store.StreamID) *jsonWaiter {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.waiters[st]
}

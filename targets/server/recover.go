package server

import (
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// reasonInterrupted marks a call a restart cut short: its outcome is
// unknown (a charge may or may not have happened).
const reasonInterrupted = "interrupted_by_restart"

// recoverRestart takes over the sessions a file store kept across a
// restart and resolves every request that was still awaiting its response,
// so that no client waits forever: a tool call gets an error result with
// structuredContent {"error":"interrupted_by_restart"}, any other request a
// JSON-RPC error. A request answered as JSON lost its connection with the
// old process, so its result is recorded as dropped.
func (s *Server) recoverRestart() {
	for _, ls := range s.store.Sessions() {
		sess := newSession(ls)
		s.sessions[sess.id] = sess
		sess.mu.Lock()
		s.armIdleLocked(sess)
		sess.mu.Unlock()
		s.log.Info("session recovered", "session", sess.id, "client", sess.client, "protocol", sess.version)
	}
	for _, p := range s.store.Pending() {
		sess := s.sessions[p.Session.Info().ID]
		if sess == nil {
			continue
		}
		c := &call{sess: sess, stream: p.Stream, kind: p.Kind, id: p.Request.ID, key: p.Request.Key(),
			method: p.Request.Method, tool: p.Request.Tool, orderID: p.Request.OrderID, ran: p.Request.Tool != ""}
		if _, ok := sess.claim([]string{c.key}); !ok {
			continue
		}
		s.log.Info("resolving a call interrupted by the restart", "session", sess.id, "request", c.key, "tool", c.tool)
		if !c.ran {
			s.respond(c, mcp.NewError(c.id, mcp.CodeInternalError, reasonInterrupted), false)
			continue
		}
		out := tools.Failure(reasonInterrupted, nil)
		s.respond(c, message(c.id, out), true)
		s.record(c.ledgerCall().Finished(out))
	}
}

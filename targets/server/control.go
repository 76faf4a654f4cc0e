package server

import (
	"net/http"
	"time"
)

// terminateWait bounds how long /control/terminate waits for the close
// events to reach the attached connections before it answers.
const terminateWait = 2 * time.Second

type statusBody struct {
	Sessions        int `json:"sessions"`
	InflightCalls   int `json:"inflight_calls"`
	AttachedStreams int `json:"attached_streams"`
}

type sessionsBody struct {
	Sessions []string `json:"sessions"`
}

func (s *Server) serveHealthz(w http.ResponseWriter, _ *http.Request) {
	if s.stopped() {
		writeJSON(w, http.StatusServiceUnavailable, map[string]bool{"ok": false})
		return
	}
	writeJSON(w, http.StatusOK, map[string]bool{"ok": true})
}

func (s *Server) serveStatus(w http.ResponseWriter, _ *http.Request) {
	st := statusBody{InflightCalls: s.calls.count()}
	for _, sess := range s.liveSessions() {
		st.Sessions++
		st.AttachedStreams += len(sess.attachments())
	}
	writeJSON(w, http.StatusOK, st)
}

// serveExpire ends sessions now, exactly as an idle-TTL expiry would.
func (s *Server) serveExpire(w http.ResponseWriter, r *http.Request) {
	targets, ok := s.controlTargets(w, r)
	if !ok {
		return
	}
	ended := []string{}
	for _, sess := range targets {
		if s.endSession(sess, reasonExpired) {
			ended = append(ended, sess.id)
		}
	}
	writeJSON(w, http.StatusOK, sessionsBody{Sessions: ended})
}

// serveTerminate sends a close event on every attached connection of the
// sessions and ends them. It answers once those connections have ended, or
// after terminateWait.
func (s *Server) serveTerminate(w http.ResponseWriter, r *http.Request) {
	targets, ok := s.controlTargets(w, r)
	if !ok {
		return
	}
	ended := []string{}
	var conns []*attachment
	for _, sess := range targets {
		atts := sess.attachments()
		if s.endSession(sess, reasonTerminated) {
			ended = append(ended, sess.id)
			conns = append(conns, atts...)
		}
	}
	deadline := time.NewTimer(terminateWait)
	defer deadline.Stop()
	for _, a := range conns {
		select {
		case <-a.detached:
		case <-deadline.C:
			s.log.Info("terminate: connections still attached after the wait", "wait", terminateWait)
			writeJSON(w, http.StatusOK, sessionsBody{Sessions: ended})
			return
		}
	}
	writeJSON(w, http.StatusOK, sessionsBody{Sessions: ended})
}

// controlTargets is the session named by ?session=ID, or every session.
func (s *Server) controlTargets(w http.ResponseWriter, r *http.Request) ([]*session, bool) {
	q := r.URL.Query()
	if !q.Has("session") {
		return s.liveSessions(), true
	}
	sess, err := s.lookup(q.Get("session"))
	if err != nil {
		writeError(w, http.StatusServiceUnavailable, errStoreUnreachable, "the shared session store cannot be read: "+err.Error())
		return nil, false
	}
	if sess == nil {
		writeError(w, http.StatusNotFound, errSessionNotFound, "no such session")
		return nil, false
	}
	return []*session{sess}, true
}

// tasksBody is the answer of /control/drop_tasks.
type tasksBody struct {
	Tasks []string `json:"tasks"`
}

// serveDropTasks makes the task store forget every task now, as a replica
// that never held them, or a store wiped, would: later tasks/get for them
// get "task not found". Tools still running carry on, their results going
// nowhere. It answers 404 when tasks are off.
func (s *Server) serveDropTasks(w http.ResponseWriter, _ *http.Request) {
	if s.tasks == nil {
		writeError(w, http.StatusNotFound, errBadRequest, "tasks are off")
		return
	}
	writeJSON(w, http.StatusOK, tasksBody{Tasks: s.tasks.dropAll()})
}

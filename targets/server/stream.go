package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// readBatch bounds the events written between two looks at the stream.
const readBatch = 256

// closeData is the data of the close event sent on terminate.
var closeData = []byte(`{"reason":"terminated"}`)

// pump writes the events of stream st after cursor to an SSE response: what
// is retained first (a replay), then live events as they are appended. The
// first flush sends the response header with whatever events were ready
// (the priming event of a new stream on 2025-11-25), so a connection cut
// between the two cannot leave a client with a 200 but no cursor. It
// returns when the stream is complete (every request answered and written),
// the client goes away, a newer connection takes the stream over (a), the
// session ends (after a close event, when it was terminated), or the server
// stops: at once for the standalone stream and with the file store, once
// the drain is over for a request's stream on the memory store, whose
// result may still come. A stream the server ends gets a retry hint first. A stream is the durable thing; this connection
// is only a viewport onto it.
func (s *Server) pump(w http.ResponseWriter, r *http.Request, sess *session, st store.StreamID, a *attachment, cursor int64) {
	s.pumps.add()
	defer s.pumps.done()
	rc := http.NewResponseController(w)
	var keepalive <-chan time.Time
	if s.cfg.Keepalive > 0 {
		t := time.NewTicker(s.cfg.Keepalive)
		defer t.Stop()
		keepalive = t.C
	}
	retry := s.retryFor(sess)
	stopping := s.stopping
	flushed := false // the response header (written unflushed) has gone out
	for {
		b := sess.log.Read(st, cursor, readBatch)
		if b.Gap {
			if !s.skipGap(sess, st, cursor, b.Head) {
				return
			}
			cursor = b.Head
			continue
		}
		if err := writeEvents(w, b.Events, retry); err != nil {
			return
		}
		if n := len(b.Events); n > 0 {
			cursor = b.Events[n-1].ID
		}
		if len(b.Events) > 0 || !flushed { // the first flush carries the header
			if rc.Flush() != nil {
				return
			}
			flushed = true
		}
		if b.Closed {
			sessionEnded(w, rc, sess)
			return
		}
		if b.Complete {
			return
		}
		if len(b.Events) == readBatch {
			continue
		}
		select {
		case <-b.Changed:
		case <-keepalive:
			if mcp.WriteComment(w, "keepalive") != nil || rc.Flush() != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-a.kickedC():
			s.log.Debug("stream taken over by a newer connection", "session", sess.id, "stream", st.String())
			return
		case <-sess.done:
			sessionEnded(w, rc, sess)
			return
		case <-stopping:
			// The standalone stream never completes. With the file store the
			// result goes to the journal and the restarted server replays
			// it, so the connection ends now and the deploy is not held up;
			// with the memory store this connection is the result's only way
			// out, so it drains.
			if st == store.Standalone || s.store.Durable() {
				retryHint(w, rc, retry)
				return
			}
			stopping = nil
		case <-s.drained:
			retryHint(w, rc, retry)
			return
		}
	}
}

// retryFor is the retry field of sess's streams: Config.Retry on
// 2025-11-25, none before (older clients were not told to expect one).
func (s *Server) retryFor(sess *session) time.Duration {
	if sess.version == mcp.Version20251125 {
		return s.cfg.Retry
	}
	return 0
}

// retryHint tells a client the server is closing its stream on purpose and
// when to come back: an SSE block with only the retry field, which sets the
// reconnection time without dispatching an event.
func retryHint(w http.ResponseWriter, rc *http.ResponseController, retry time.Duration) {
	if retry <= 0 {
		return
	}
	if _, err := fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds()); err == nil {
		_ = rc.Flush()
	}
}

// sessionEnded tells a connection its session was terminated with a close
// event; an expired or deleted session just ends the stream.
func sessionEnded(w http.ResponseWriter, rc *http.ResponseController, sess *session) {
	if sess.endReason() == reasonTerminated {
		_ = mcp.WriteEvent(w, mcp.Event{Type: mcp.EventClose, Data: closeData})
		_ = rc.Flush()
	}
}

// skipGap handles events evicted under a live connection (a reader slower
// than retention). Under "gone" it ends the connection, so the client's
// resume meets the 410 that tells it about the gap; it reports false. Under
// "silent_head" it reports true: the caller jumps to head without a word,
// which is the incident's bug.
func (s *Server) skipGap(sess *session, st store.StreamID, cursor, head int64) bool {
	if s.cfg.OnUnresumable == OnUnresumableGone {
		s.log.Info("events evicted under a live connection; ending it", "session", sess.id, "stream", st.String(), "cursor", cursor)
		return false
	}
	s.log.Info("silent_head: skipping evicted events without telling the client (the incident's bug)",
		"session", sess.id, "stream", st.String(), "cursor", cursor, "head", head)
	return true
}

// writeEvents frames events as SSE. A priming event (no data) carries the
// retry field when one is configured.
func writeEvents(w http.ResponseWriter, events []store.Event, retry time.Duration) error {
	for _, ev := range events {
		e := mcp.Event{ID: strconv.FormatInt(ev.ID, 10), Data: ev.Data}
		if len(ev.Data) == 0 {
			e.Retry = retry
		}
		if err := mcp.WriteEvent(w, e); err != nil {
			return err
		}
	}
	return nil
}

// serveGET opens the standalone SSE stream, or resumes any stream of the
// session from a Last-Event-ID.
func (s *Server) serveGET(w http.ResponseWriter, r *http.Request) {
	if _, sseOK := accepts(r.Header.Values("Accept")); !sseOK {
		writeError(w, http.StatusNotAcceptable, errNotAcceptable, "Accept must allow text/event-stream")
		return
	}
	sess := s.enter(w, r)
	if sess == nil {
		return
	}
	defer s.leave(sess)
	st, cursor, ok := s.resumePoint(w, r, sess)
	if !ok {
		return
	}
	a, res := sess.attach(r.Context(), st, http.NewResponseController(w))
	switch res {
	case attachConflict:
		writeJSON(w, http.StatusConflict, errorBody{Error: errStreamAttached, Message: "another connection still holds this stream"})
		return
	case attachGone:
		writeError(w, http.StatusNotFound, errSessionNotFound, "no such session")
		return
	}
	defer sess.detach(st, a)
	v20251125 := sess.version == mcp.Version20251125
	switch {
	case cursor < 0: // a fresh standalone stream: no replay, a priming event on 2025-11-25
		cursor = sess.log.Head(store.Standalone)
		if v20251125 {
			if _, err := sess.log.Append(store.Standalone, nil, "", nil); err != nil {
				s.storeFailure(w, err)
				return
			}
		}
		writeSSEHeaders(w)
	case v20251125: // a resumed stream starts with its cursor as the priming event
		writeSSEHeaders(w)
		if writeEvents(w, []store.Event{{ID: cursor}}, s.retryFor(sess)) != nil {
			return
		}
	default:
		writeSSEHeaders(w)
	}
	s.pump(w, r, sess, st, a, cursor)
}

// resumePoint picks the stream and cursor of a GET: the standalone stream
// with cursor -1 without Last-Event-ID, otherwise the stream the id belongs
// to. An id that cannot be honoured gets 410 under "gone" and continues at
// the stream's head under "silent_head". It answers errors itself.
func (s *Server) resumePoint(w http.ResponseWriter, r *http.Request, sess *session) (store.StreamID, int64, bool) {
	vals := r.Header.Values(mcp.HeaderLastEventID)
	if len(vals) == 0 {
		return store.Standalone, -1, true
	}
	id, ok := parseEventID(vals)
	if !ok {
		writeError(w, http.StatusBadRequest, errBadLastEventID, "Last-Event-ID must be one event id issued by this session")
		return 0, 0, false
	}
	loc, err := sess.log.Locate(id)
	switch {
	case errors.Is(err, store.ErrUnknownEvent):
		writeError(w, http.StatusBadRequest, errBadLastEventID, "this session never issued event "+vals[0])
		return 0, 0, false
	case err != nil:
		s.storeFailure(w, err)
		return 0, 0, false
	case loc.Honourable:
		s.log.Debug("resume", "session", sess.id, "stream", loc.Stream.String(), "last_event_id", id)
		return loc.Stream, id, true
	case s.cfg.OnUnresumable == OnUnresumableGone:
		s.log.Info("resume window exceeded", "session", sess.id, "stream", loc.Stream.String(), "last_event_id", id, "head", loc.Head)
		writeJSON(w, http.StatusGone, resumeGone{Error: errResumeWindow, LastEventID: id, OldestRetainedID: loc.Oldest, HeadEventID: loc.Head, ResumeEventID: loc.Evicted})
		return 0, 0, false
	}
	s.skipGap(sess, loc.Stream, id, loc.Head)
	return loc.Stream, loc.Head, true
}

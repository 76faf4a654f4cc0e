package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/server/store"
)

// Reasons a session ends (ledger session_closed).
const (
	reasonDeleted    = "deleted"
	reasonExpired    = "expired"
	reasonTerminated = "terminated"
	reasonShutdown   = "shutdown"
)

// takeoverWait is how long a request to attach a stream waits for the
// connection it displaces to let go before answering 409. A client that
// reconnects knows its old connection is dead while the server often does
// not (a half-open connection behind a load balancer that cut it), so the
// newer connection takes the stream over: the old one is told to stop and
// its writes are failed at once. Only one stuck past this wait still holds
// the stream.
const takeoverWait = 2 * time.Second

// session is the live state of one session around its log: requests in
// progress, connections attached to its streams, calls that can be
// cancelled, and the idle timer.
type session struct {
	log     *store.Session
	id      string
	version string
	client  string
	done    chan struct{} // closed when the session ends

	mu       sync.Mutex
	active   int // requests in progress, attached connections included
	gen      int // bumped on every begin, so a stale idle timer does nothing
	timer    *time.Timer
	ended    bool
	reason   string
	attached map[store.StreamID]*attachment
	inflight map[string]context.CancelCauseFunc // request key → cancel (nil until a tool runs)
	waiters  map[store.StreamID]*jsonWaiter
}

// kickGrace is how long a displaced connection has to let go of its stream
// before its pending writes are failed.
const kickGrace = 100 * time.Millisecond

// attachment is a connection attached to a stream. kicked is closed when a
// newer connection takes the stream over; rc, when set, lets the taker
// fail the old connection's pending writes.
type attachment struct {
	detached chan struct{}
	kicked   chan struct{}
	kickOnce sync.Once
	rc       *http.ResponseController

	mu   sync.Mutex
	gone bool // detached: rc must not be used any more
}

func newAttachment(rc *http.ResponseController) *attachment {
	return &attachment{detached: make(chan struct{}), kicked: make(chan struct{}), rc: rc}
}

// kick tells the connection to let go of its stream and, if it has not
// within kickGrace (a write blocked on a connection nobody reads), fails
// its writes.
func (a *attachment) kick() {
	a.kickOnce.Do(func() {
		close(a.kicked)
		time.AfterFunc(kickGrace, func() {
			a.mu.Lock()
			defer a.mu.Unlock()
			if !a.gone && a.rc != nil {
				_ = a.rc.SetWriteDeadline(time.Now())
			}
		})
	})
}

// kickedC is a.kicked, or nil (never ready) for no attachment.
func (a *attachment) kickedC() <-chan struct{} {
	if a == nil {
		return nil
	}
	return a.kicked
}

func newSession(ls *store.Session) *session {
	info := ls.Info()
	return &session{log: ls, id: info.ID, version: info.Version, client: info.Client, done: make(chan struct{})}
}

// newSessionID returns 128 crypto-random bits in hex.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// openSession creates a session that already counts one request in
// progress (the initialize); the caller must leave it.
func (s *Server) openSession(version, client string) (*session, error) {
	info := store.SessionInfo{ID: newSessionID(), Version: version, Client: client, Created: time.Now()}
	ls, err := s.store.CreateSession(info)
	if err != nil {
		return nil, fmt.Errorf("open session: %w", err)
	}
	sess := newSession(ls)
	sess.active = 1
	s.mu.Lock()
	s.sessions[sess.id] = sess
	s.mu.Unlock()
	s.record(sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: sess.id, Client: client, Detail: version})
	s.log.Info("session opened", "session", sess.id, "client", client, "protocol", version)
	return sess, nil
}

// lookup returns the live session with the id, or nil. With a shared
// store a session this replica has not served yet may have been opened on
// another: lookup catches up with the journal and takes it over. An error
// says the shared journal could not be read: whether the session exists is
// unknown, which is no 404.
func (s *Server) lookup(id string) (*session, error) {
	s.mu.Lock()
	sess := s.sessions[id]
	s.mu.Unlock()
	if sess != nil || id == "" {
		return sess, nil
	}
	if err := s.store.Sync(s.life); err != nil {
		s.log.Warn("shared store unreachable", "err", err)
		return nil, err
	}
	ls := s.store.Session(id)
	if ls == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[id]; sess != nil {
		return sess, nil
	}
	sess = newSession(ls)
	s.sessions[id] = sess
	sess.mu.Lock()
	s.armIdleLocked(sess)
	sess.mu.Unlock()
	s.log.Info("session taken over from the shared store", "session", id, "client", sess.client)
	return sess, nil
}

func (s *Server) liveSessions() []*session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.sessions))
}

// begin counts a request in progress and pauses the idle timer. It reports
// false once the session has ended.
func (sess *session) begin() bool {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if sess.ended {
		return false
	}
	sess.active++
	sess.gen++
	if sess.timer != nil {
		sess.timer.Stop()
		sess.timer = nil
	}
	return true
}

// leave ends a request in progress; the last one out starts the idle timer.
func (s *Server) leave(sess *session) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	sess.active--
	if sess.active == 0 && !sess.ended {
		s.armIdleLocked(sess)
	}
}

func (s *Server) armIdleLocked(sess *session) {
	if s.cfg.SessionTTL <= 0 {
		return
	}
	gen := sess.gen
	sess.timer = time.AfterFunc(s.cfg.SessionTTL, func() { s.expireIdle(sess, gen) })
}

// expireIdle ends a session whose idle timer ran out, unless a request
// arrived since the timer was armed.
func (s *Server) expireIdle(sess *session, gen int) {
	if s.stopped() {
		return
	}
	sess.mu.Lock()
	idle := sess.active == 0 && sess.gen == gen && !sess.ended
	sess.mu.Unlock()
	if idle {
		s.endSession(sess, reasonExpired)
	}
}

// endSession ends a session: later requests get 404, attached connections
// end (with a close event when terminated), the log is closed, and the
// ledger hears of it. It reports false if the session had already ended.
func (s *Server) endSession(sess *session, reason string) bool {
	sess.mu.Lock()
	if sess.ended {
		sess.mu.Unlock()
		return false
	}
	sess.ended, sess.reason = true, reason
	if sess.timer != nil {
		sess.timer.Stop()
		sess.timer = nil
	}
	close(sess.done)
	sess.mu.Unlock()

	s.mu.Lock()
	delete(s.sessions, sess.id)
	s.mu.Unlock()
	if err := sess.log.Close(reason); err != nil {
		s.log.Warn("closing session log", "session", sess.id, "err", err)
	}
	s.record(sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: sess.id, Client: sess.client, Reason: reason})
	s.log.Info("session closed", "session", sess.id, "reason", reason)
	return true
}

func (sess *session) endReason() string {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return sess.reason
}

type attachResult int

const (
	attached attachResult = iota
	attachConflict
	attachGone
)

// attach claims stream st for the connection behind rc. A connection
// already attached is taken over: it is kicked and attach waits up to
// takeoverWait for it to let go.
func (sess *session) attach(ctx context.Context, st store.StreamID, rc *http.ResponseController) (*attachment, attachResult) {
	wait := time.NewTimer(takeoverWait)
	defer wait.Stop()
	for {
		sess.mu.Lock()
		if sess.ended {
			sess.mu.Unlock()
			return nil, attachGone
		}
		old := sess.attached[st]
		if old == nil {
			a := newAttachment(rc)
			if sess.attached == nil {
				sess.attached = map[store.StreamID]*attachment{}
			}
			sess.attached[st] = a
			sess.mu.Unlock()
			return a, attached
		}
		sess.mu.Unlock()
		old.kick()
		select {
		case <-old.detached:
		case <-wait.C:
			return nil, attachConflict
		case <-ctx.Done():
			return nil, attachConflict
		}
	}
}

func (sess *session) detach(st store.StreamID, a *attachment) {
	sess.mu.Lock()
	if sess.attached[st] == a {
		delete(sess.attached, st)
	}
	sess.mu.Unlock()
	a.mu.Lock()
	a.gone = true
	a.mu.Unlock()
	close(a.detached)
}

func (sess *session) attachments() []*attachment {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	return slices.Collect(maps.Values(sess.attached))
}

// claim registers request keys as in flight. It returns the index of the
// first key that is already in flight (or repeated within keys), claiming
// nothing then.
func (sess *session) claim(keys []string) (int, bool) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	seen := map[string]bool{}
	for i, k := range keys {
		if _, busy := sess.inflight[k]; busy || seen[k] {
			return i, false
		}
		seen[k] = true
	}
	if sess.inflight == nil {
		sess.inflight = map[string]context.CancelCauseFunc{}
	}
	for _, k := range keys {
		sess.inflight[k] = nil
	}
	return 0, true
}

func (sess *session) setCancel(key string, cancel context.CancelCauseFunc) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	if _, ok := sess.inflight[key]; ok {
		sess.inflight[key] = cancel
	}
}

// cancel cancels the running tool of request key, if any.
func (sess *session) cancel(key string) bool {
	sess.mu.Lock()
	cancel := sess.inflight[key]
	sess.mu.Unlock()
	if cancel == nil {
		return false
	}
	cancel(errCancelled)
	return true
}

func (sess *session) retire(key string) {
	sess.mu.Lock()
	defer sess.mu.Unlock()
	delete(sess.inflight, key)
}

package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/internal/appendlog"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Errors callers branch on.
var (
	// ErrSessionClosed is returned by every write to a session that has been
	// closed (deleted, expired, terminated, or shut down).
	ErrSessionClosed = errors.New("store: session closed")
	// ErrUnknownEvent is returned by [Session.Locate] for an id the session
	// never issued.
	ErrUnknownEvent = errors.New("store: event id never issued")
	// ErrStoreClosed is returned by writes after [Store.Close].
	ErrStoreClosed = errors.New("store: closed")
)

// Options configure a store.
type Options struct {
	// Path is the journal file. Empty keeps everything in memory, unless
	// Shared is set.
	Path string
	// Shared is a journal the replicas of one deployment share (see
	// [Shared]); it excludes Path. Owner is this replica's stable name
	// (the same across its restarts): the stream records it writes carry
	// it, and Pending lists only its own requests, as another replica's
	// are that replica's to resolve.
	Shared Shared
	Owner  string
	// RetentionEvents bounds the events kept per session; 0 is unbounded.
	RetentionEvents int
	// RetentionAge evicts events older than this; 0 keeps them regardless
	// of age.
	RetentionAge time.Duration
	// Now is the clock used for event times and age eviction; nil is
	// time.Now.
	Now func() time.Time
}

// StreamID identifies a stream within a session. 0 is the standalone GET
// stream; POST response streams are numbered from 1.
type StreamID int64

// Standalone is the id of a session's standalone GET stream.
const Standalone StreamID = 0

// String is the stream's name in ledger records: "get" or "post-N".
func (id StreamID) String() string {
	if id == Standalone {
		return "get"
	}
	return "post-" + strconv.FormatInt(int64(id), 10)
}

// StreamKind says how a stream reaches the client.
type StreamKind string

// The stream kinds.
const (
	KindStandalone StreamKind = "standalone" // the GET stream; never completes
	KindSSE        StreamKind = "sse"        // a POST answered with text/event-stream
	KindJSON       StreamKind = "json"       // a POST answered with application/json: no events
)

// Request is a request a stream owes a response to.
type Request struct {
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Tool    string          `json:"tool,omitempty"`
	OrderID string          `json:"order_id,omitempty"`
}

// Key is the request id in canonical text form (see [mcp.IDString]).
func (r Request) Key() string { return mcp.IDString(r.ID) }

// Event is one entry of a session's log. Data is nil for a priming event.
type Event struct {
	ID         int64
	Stream     StreamID
	At         time.Time
	Data       json.RawMessage
	RespondsTo string // the key of the request this event answers, if any
}

// SessionInfo is what a session is opened with.
type SessionInfo struct {
	ID      string
	Version string // negotiated protocol version
	Client  string // clientInfo.name
	Created time.Time
}

// Pending is a request that was awaiting its response when the store was
// opened: the server that wrote it stopped before answering.
type Pending struct {
	Session *Session
	Stream  StreamID
	Kind    StreamKind
	Request Request
}

// Store holds every live session. It is safe for concurrent use.
type Store struct {
	opts    Options
	journal *appendlog.Log
	shared  *sharedState

	mu       sync.Mutex
	closed   bool
	sessions map[string]*Session
	keys     map[string]bool
	pending  []Pending
}

// Open opens a store, replaying its journal when opts.Path is set.
func Open(opts Options) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Store{opts: opts, sessions: map[string]*Session{}, keys: map[string]bool{}}
	if opts.Shared != nil {
		if opts.Owner == "" {
			return nil, errNoOwner
		}
		if err := s.openShared(opts); err != nil {
			return nil, err
		}
		return s, nil
	}
	if opts.Path == "" {
		return s, nil
	}
	j, err := appendlog.Open(opts.Path, appendlog.Options{}, s.replay)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", opts.Path, err)
	}
	s.journal = j
	s.collectPending()
	return s, nil
}

// Durable reports whether the store survives a restart.
func (s *Store) Durable() bool { return s.journal != nil || s.shared != nil }

// Sessions returns every live session.
func (s *Store) Sessions() []*Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Values(s.sessions))
}

// Pending returns the requests that were awaiting a response when the store
// was opened, in journal order.
func (s *Store) Pending() []Pending { return s.pending }

// CreateSession opens a session with its standalone stream.
func (s *Store) CreateSession(info SessionInfo) (*Session, error) {
	rec := record{Op: opOpen, Session: info.ID, Version: info.Version, Client: info.Client, At: info.Created.UnixNano()}
	if err := s.write(&rec); err != nil {
		return nil, err
	}
	ss := newSession(s, info)
	s.mu.Lock()
	s.sessions[info.ID] = ss
	s.mu.Unlock()
	return ss, nil
}

// ReserveKey claims an idempotency key. It reports false when the key was
// claimed before (by this process or, with a journal, before a restart).
func (s *Store) ReserveKey(key string) (bool, error) {
	s.mu.Lock()
	if s.keys[key] {
		s.mu.Unlock()
		return false, nil
	}
	s.keys[key] = true
	s.mu.Unlock()
	if err := s.write(&record{Op: opKey, Key: key}); err != nil {
		s.mu.Lock()
		delete(s.keys, key)
		s.mu.Unlock()
		return false, err
	}
	return true, nil
}

// ReleaseKey gives back a key whose charge did not happen.
func (s *Store) ReleaseKey(key string) error {
	if err := s.write(&record{Op: opUnkey, Key: key}); err != nil {
		return err
	}
	s.mu.Lock()
	delete(s.keys, key)
	s.mu.Unlock()
	return nil
}

// Close closes the journal. Later writes fail with [ErrStoreClosed]. It is
// idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if s.shared != nil {
		if err := s.shared.close(); err != nil {
			return fmt.Errorf("store: close: %w", err)
		}
		return nil
	}
	if s.journal == nil {
		return nil
	}
	if err := s.journal.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// write journals one record, durably, when the store has a journal.
func (s *Store) write(rec *record) error {
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return ErrStoreClosed
	}
	if s.journal == nil && s.shared == nil {
		return nil
	}
	if s.shared != nil {
		rec.Writer, rec.Owner = s.shared.writer, s.shared.owner
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("store: encode %s: %w", rec.Op, err)
	}
	if s.shared != nil {
		if err := s.shared.j.Append(context.Background(), b); err != nil {
			return fmt.Errorf("store: shared journal %s: %w", rec.Op, err)
		}
		return nil
	}
	if err := s.journal.Append(b); err != nil {
		if errors.Is(err, appendlog.ErrClosed) {
			return ErrStoreClosed
		}
		return fmt.Errorf("store: journal %s: %w", rec.Op, err)
	}
	return nil
}

func (s *Store) forget(id string) {
	s.mu.Lock()
	delete(s.sessions, id)
	s.mu.Unlock()
}

package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Shared is a journal several servers (the replicas of one deployment)
// append to and read back, such as a Redis stream ([DialRedis]). Every
// replica applies every record, its own when it writes them and the
// others' as it reads them, so a session opened on one replica is known to
// all, and an event one appends is replayed by another to a client that
// resumes there.
//
// The journal orders the records; a replica applies its own at once and
// the others' in journal order, so two replicas writing to one session at
// the same moment could see different orders. The reference server writes
// a session's events from the replica that runs the call, and a resume
// elsewhere only reads them.
type Shared interface {
	// Append adds one record to the journal.
	Append(ctx context.Context, rec []byte) error
	// Read calls fn with every record after the last one Read returned,
	// in journal order; with block > 0 it waits that long for one to come
	// when there is none. Calls are serialised by the store.
	Read(ctx context.Context, block time.Duration, fn func(rec []byte) error) error
	// Close releases the connection.
	Close() error
}

// tailBlock is how long the tailer waits on the shared journal per read.
const tailBlock = 20 * time.Millisecond

// sharedState is a store's part in a shared journal.
type sharedState struct {
	j      Shared
	writer string     // this store's incarnation, on every record it writes
	owner  string     // Options.Owner: whose pending requests Pending lists
	readMu sync.Mutex // one reader at a time: the tailer or Sync
	stop   context.CancelFunc
	done   chan struct{}
}

// openShared replays the shared journal into s and starts following it.
func (s *Store) openShared(opts Options) error {
	ctx, cancel := context.WithCancel(context.Background())
	sh := &sharedState{j: opts.Shared, writer: newWriterID(), owner: opts.Owner, stop: cancel, done: make(chan struct{})}
	s.shared = sh
	if err := sh.j.Read(ctx, 0, s.replay); err != nil {
		cancel()
		return fmt.Errorf("store: replay the shared journal: %w", err)
	}
	s.collectPending()
	go s.tail(ctx)
	return nil
}

// tail applies the other replicas' records until the store closes.
func (s *Store) tail(ctx context.Context) {
	defer close(s.shared.done)
	for ctx.Err() == nil {
		if err := s.readShared(ctx, tailBlock); err != nil && ctx.Err() == nil {
			time.Sleep(tailBlock) // the journal is unreachable: try again
		}
	}
}

// Sync applies every record the shared journal holds now, so that a
// session another replica opened a moment ago is known before a request
// for it is answered 404. Without a shared journal it does nothing.
func (s *Store) Sync(ctx context.Context) error {
	if s.shared == nil {
		return nil
	}
	return s.readShared(ctx, 0)
}

func (s *Store) readShared(ctx context.Context, block time.Duration) error {
	sh := s.shared
	sh.readMu.Lock()
	defer sh.readMu.Unlock()
	return sh.j.Read(ctx, block, s.applyRemote)
}

// applyRemote applies a record another replica wrote (this store's own are
// applied as they are written).
func (s *Store) applyRemote(line []byte) error {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if rec.Writer == s.shared.writer {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applyRecord(rec)
}

// Session returns the live session with the id, or nil.
func (s *Store) Session(id string) *Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

func (sh *sharedState) close() error {
	sh.stop()
	<-sh.done
	return sh.j.Close()
}

// newWriterID names one incarnation of a store.
func newWriterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

var errNoOwner = errors.New("store: a shared journal needs Options.Owner, the replica's stable name")

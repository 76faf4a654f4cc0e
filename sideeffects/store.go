// # Durable store
//
// [Store] keeps the ledger in an fsync'd append log (internal/appendlog)
// rather than an embedded database, for three reasons. The export is the log
// itself: every line of the file is one [Record] as it appears in
// ledger.jsonl, readable by any tool and by [LoadLedger], so nothing has to be
// translated out of a database format after a run. Group commit amortises the
// fsync: the many tools of a server record at once, and concurrent appends
// share one write and one fsync per batch instead of one each. Recovery is a
// scan: after a SIGKILL the store replays every complete line and drops a torn
// final one, with no write-ahead log or compaction to reason about. The ledger
// never updates or deletes, and its one index (record id to record) fits in
// memory, so a database would add a dependency and a file format without
// adding a guarantee.
package sideeffects

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/chaosrun/chaosrun/internal/appendlog"
)

// ErrInvalid marks a record the store refuses: it fails [Record.Validate].
var ErrInvalid = errors.New("invalid record")

// ErrClosed is returned by appends after [Store.Close].
var ErrClosed = errors.New("ledger store closed")

// StoreOptions tune a store. The zero value is durable.
type StoreOptions struct {
	// NoSync skips fsync: acknowledged records survive a process kill but
	// not a machine crash. For tests and benchmarks.
	NoSync bool
}

// Store is the durable ledger. It stores each record id once, numbers
// records 1, 2, ... in the order they are accepted, and acknowledges an
// append only once the record is on disk. It is safe for concurrent use.
//
// N increases with acceptance order, not with position in the file: group
// commit may write N=5 before N=4, and the store sorts by N on open. A crash
// between accepting a record and making it durable leaves its N unused; such
// a record was never acknowledged, so its writer retries it under the same id
// and it is stored under a new N.
type Store struct {
	log *appendlog.Log

	mu      sync.Mutex
	byID    map[string]*entry
	order   []*entry // by N
	nextN   int64
	durable int // records written without error
	closed  bool
	broken  error // the first write error; the store refuses appends after it

	inflight sync.WaitGroup // accepted records not yet settled
}

// entry is one accepted record. done is closed once the write finished;
// err says how.
type entry struct {
	rec  Record
	done chan struct{}
	err  error
}

// Stored is the outcome of one append: the record as stored (with its N)
// and whether its id had been stored before.
type Stored struct {
	Record    Record
	Duplicate bool
}

// OpenStore opens or creates the ledger at path and replays it.
func OpenStore(path string, opts StoreOptions) (*Store, error) {
	s := &Store{byID: map[string]*entry{}, nextN: 1}
	replay := func(line []byte) error {
		var r Record
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if r.N <= 0 {
			return fmt.Errorf("record %q has no n", r.ID)
		}
		if _, seen := s.byID[r.ID]; seen {
			return nil
		}
		e := &entry{rec: r, done: make(chan struct{})}
		close(e.done)
		s.byID[r.ID] = e
		s.order = append(s.order, e)
		s.durable++
		s.nextN = max(s.nextN, r.N+1)
		return nil
	}
	log, err := appendlog.Open(path, appendlog.Options{NoSync: opts.NoSync}, replay)
	if err != nil {
		return nil, fmt.Errorf("ledger store: %w", err)
	}
	slices.SortFunc(s.order, func(a, b *entry) int { return cmp.Compare(a.rec.N, b.rec.N) })
	s.log = log
	return s, nil
}

// Append stores r durably, unless a record with its id is already stored, in
// which case the stored record is returned with duplicate set. An empty ID
// is an error: the writer chooses ids so that its retries are recognised.
func (s *Store) Append(ctx context.Context, r Record) (Record, bool, error) {
	out, err := s.AppendAll(ctx, []Record{r})
	if err != nil {
		return Record{}, false, err
	}
	return out[0].Record, out[0].Duplicate, nil
}

// AppendAll validates every record and stores none unless all are valid.
// It returns, in input order, each record as stored, once every one of them
// is durable. A record whose id is already stored, or appears earlier in
// recs, is not stored again. A failed write breaks the store: later appends
// fail, because after a failed fsync nothing tells which bytes reached disk.
func (s *Store) AppendAll(ctx context.Context, recs []Record) ([]Stored, error) {
	for i := range recs {
		if err := recs[i].Validate(); err != nil {
			return nil, fmt.Errorf("ledger store: record %d: %w: %w", i, ErrInvalid, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, dup, fresh, err := s.accept(recs)
	if err != nil {
		return nil, err
	}
	s.write(fresh)
	out := make([]Stored, len(recs))
	for i, e := range entries {
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err != nil {
			return nil, fmt.Errorf("ledger store: %w", e.err)
		}
		out[i] = Stored{Record: e.rec, Duplicate: dup[i]}
	}
	return out, nil
}

// accept numbers the records whose ids are new. It returns the entry of
// every record, whether each was a duplicate, and the new entries, which
// the caller must write.
func (s *Store) accept(recs []Record) (entries []*entry, dup []bool, fresh []*entry, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, nil, ErrClosed
	case s.broken != nil:
		return nil, nil, nil, fmt.Errorf("ledger store: broken by an earlier write: %w", s.broken)
	}
	entries, dup = make([]*entry, len(recs)), make([]bool, len(recs))
	for i, r := range recs {
		if e, ok := s.byID[r.ID]; ok {
			entries[i], dup[i] = e, true
			continue
		}
		r.N = s.nextN
		s.nextN++
		e := &entry{rec: r, done: make(chan struct{})}
		s.byID[r.ID] = e
		s.order = append(s.order, e)
		entries[i] = e
		fresh = append(fresh, e)
	}
	s.inflight.Add(len(fresh))
	return entries, dup, fresh, nil
}

// write appends the fresh entries as one batch of the log (one write, and
// one fsync shared with whatever else is pending) and settles each one.
func (s *Store) write(fresh []*entry) {
	lines := make([][]byte, 0, len(fresh))
	batch := fresh[:0:0]
	for _, e := range fresh {
		b, err := json.Marshal(e.rec)
		if err != nil {
			s.settle(e, err)
			s.inflight.Done()
			continue
		}
		lines, batch = append(lines, b), append(batch, e)
	}
	if len(batch) == 0 {
		return
	}
	err := s.log.AppendBatch(lines)
	for _, e := range batch {
		s.settle(e, err)
		s.inflight.Done()
	}
}

func (s *Store) settle(e *entry, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e.err = err
	switch {
	case err == nil:
		s.durable++
	case s.broken == nil:
		s.broken = err
	}
	close(e.done)
}

// Records returns every durable record in N order.
func (s *Store) Records() []Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Record, 0, len(s.order))
	for _, e := range s.order {
		if settled(e) && e.err == nil {
			out = append(out, e.rec)
		}
	}
	return out
}

// Len returns how many records are durable.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.durable
}

// settled reports whether e's write finished. The caller holds s.mu.
func settled(e *entry) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// Export writes every durable record to w as ledger.jsonl: one JSON record
// per line, in N order.
func (s *Store) Export(w io.Writer) error {
	return WriteLedger(w, s.Records())
}

// Close waits for accepted records to be written and closes the log. It is
// idempotent; appends after it fail with [ErrClosed].
func (s *Store) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.inflight.Wait()
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("ledger store: %w", err)
	}
	return nil
}

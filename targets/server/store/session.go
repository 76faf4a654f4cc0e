package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"
)

// Session is one session's log. Its methods are safe for concurrent use.
type Session struct {
	store *Store
	info  SessionInfo

	// wmu serializes writes so that journal order equals apply order, and
	// so that an Append's before-hook runs before any later write.
	wmu sync.Mutex

	mu         sync.Mutex
	closed     bool
	last       int64   // newest issued event id
	events     []Event // retained events, ascending ids
	ranges     []idRange
	streams    map[StreamID]*stream
	nextStream StreamID
	changed    chan struct{} // closed and replaced on every change
}

// idRange maps the ids first..last (inclusive) to one stream.
type idRange struct {
	first, last int64
	stream      StreamID
}

type stream struct {
	owner      string // the replica that opened it, in a shared journal
	kind       StreamKind
	pending    []Request // requests still owed a response
	head       int64     // newest event id of the stream
	maxEvicted int64     // newest evicted event id of the stream
}

func newSession(s *Store, info SessionInfo) *Session {
	return &Session{
		store:      s,
		info:       info,
		streams:    map[StreamID]*stream{Standalone: {kind: KindStandalone}},
		nextStream: 1,
		changed:    make(chan struct{}),
	}
}

// Info returns what the session was opened with.
func (ss *Session) Info() SessionInfo { return ss.info }

// Close ends the session with a reason and frees its events.
func (ss *Session) Close(reason string) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	if err := ss.commit(record{Op: opClose, Session: ss.info.ID, Reason: reason}); err != nil {
		return err
	}
	ss.store.forget(ss.info.ID)
	return nil
}

// OpenStream opens a POST response stream owing responses to reqs.
func (ss *Session) OpenStream(kind StreamKind, reqs []Request) (StreamID, error) {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	ss.mu.Lock()
	id := ss.nextStream
	ss.mu.Unlock()
	rec := record{Op: opStream, Session: ss.info.ID, Stream: id, Kind: kind, Reqs: reqs}
	if err := ss.commit(rec); err != nil {
		return 0, err
	}
	return id, nil
}

// Append adds an event to stream st and returns its id. respondsTo, when
// set, is the key of the pending request the event answers. before, when
// set, is called with the id after it is assigned and before the event is
// written, so a caller can record the event elsewhere first; no other write
// to the session happens in between.
func (ss *Session) Append(st StreamID, data json.RawMessage, respondsTo string, before func(id int64)) (int64, error) {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	ss.mu.Lock()
	if err := ss.checkLocked(st, respondsTo); err != nil {
		ss.mu.Unlock()
		return 0, err
	}
	id := ss.last + 1
	ss.mu.Unlock()
	if before != nil {
		before(id)
	}
	rec := record{Op: opEvent, Session: ss.info.ID, Stream: st, Event: id,
		At: ss.store.opts.Now().UnixNano(), Data: data, Resp: respondsTo}
	if err := ss.commit(rec); err != nil {
		return 0, err
	}
	return id, nil
}

// Settle removes a pending request without an event: it was cancelled, or
// its response went out as plain JSON.
func (ss *Session) Settle(st StreamID, key string) error {
	ss.wmu.Lock()
	defer ss.wmu.Unlock()
	ss.mu.Lock()
	err := ss.checkLocked(st, key)
	ss.mu.Unlock()
	if err != nil {
		return err
	}
	return ss.commit(record{Op: opSettle, Session: ss.info.ID, Stream: st, Resp: key})
}

func (ss *Session) checkLocked(st StreamID, key string) error {
	if ss.closed {
		return ErrSessionClosed
	}
	s := ss.streams[st]
	if s == nil {
		return fmt.Errorf("store: session %s has no stream %s", ss.info.ID, st)
	}
	if key != "" && !slices.ContainsFunc(s.pending, func(r Request) bool { return r.Key() == key }) {
		return fmt.Errorf("store: stream %s owes no response to request %s", st, key)
	}
	return nil
}

// commit journals rec and applies it. ss.wmu must be held.
func (ss *Session) commit(rec record) error {
	ss.mu.Lock()
	closed := ss.closed
	ss.mu.Unlock()
	if closed {
		return ErrSessionClosed
	}
	if err := ss.store.write(&rec); err != nil {
		return err
	}
	ss.mu.Lock()
	ss.apply(rec)
	ss.mu.Unlock()
	return nil
}

// apply changes the in-memory state for one record. ss.mu must be held.
func (ss *Session) apply(rec record) {
	switch rec.Op {
	case opClose:
		ss.closed = true
		ss.events, ss.ranges, ss.streams = nil, nil, nil
	case opStream:
		ss.streams[rec.Stream] = &stream{owner: rec.Owner, kind: rec.Kind, pending: rec.Reqs}
		ss.nextStream = max(ss.nextStream, rec.Stream+1)
	case opEvent:
		ss.applyEvent(rec)
	case opSettle:
		if s := ss.streams[rec.Stream]; s != nil {
			s.settle(rec.Resp)
		}
	}
	close(ss.changed)
	if !ss.closed {
		ss.changed = make(chan struct{})
	}
}

func (ss *Session) applyEvent(rec record) {
	s := ss.streams[rec.Stream]
	if s == nil {
		return
	}
	ss.events = append(ss.events, Event{ID: rec.Event, Stream: rec.Stream, At: time.Unix(0, rec.At), Data: rec.Data, RespondsTo: rec.Resp})
	ss.last = max(ss.last, rec.Event)
	s.head = rec.Event
	if n := len(ss.ranges); n > 0 && ss.ranges[n-1].stream == rec.Stream && ss.ranges[n-1].last == rec.Event-1 {
		ss.ranges[n-1].last = rec.Event
	} else {
		ss.ranges = append(ss.ranges, idRange{first: rec.Event, last: rec.Event, stream: rec.Stream})
	}
	if rec.Resp != "" {
		s.settle(rec.Resp)
	}
	ss.evictLocked()
}

func (s *stream) settle(key string) {
	s.pending = slices.DeleteFunc(s.pending, func(r Request) bool { return r.Key() == key })
}

// evictLocked drops events beyond the retention bounds, oldest first.
func (ss *Session) evictLocked() {
	limit, age := ss.store.opts.RetentionEvents, ss.store.opts.RetentionAge
	var cutoff time.Time
	if age > 0 {
		cutoff = ss.store.opts.Now().Add(-age)
	}
	n := 0
	for ; n < len(ss.events); n++ {
		ev := ss.events[n]
		over := limit > 0 && len(ss.events)-n > limit
		old := age > 0 && ev.At.Before(cutoff)
		if !over && !old {
			break
		}
		if s := ss.streams[ev.Stream]; s != nil {
			s.maxEvicted = max(s.maxEvicted, ev.ID)
		}
	}
	if n > 0 {
		clear(ss.events[:n])
		ss.events = ss.events[n:]
	}
}

// Batch is what [Session.Read] returns.
type Batch struct {
	Events   []Event
	Gap      bool  // an event of the stream newer than the cursor was evicted
	Head     int64 // newest event id of the stream
	Complete bool  // the stream owes no response and Events reach Head
	Closed   bool  // the session is closed
	// Changed is closed at the session's next change: wait on it, then Read
	// again.
	Changed <-chan struct{}
}

// Read returns up to max retained events of stream st with ids above after.
func (ss *Session) Read(st StreamID, after int64, max int) Batch {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	b := Batch{Changed: ss.changed, Closed: ss.closed}
	s := ss.streams[st]
	if s == nil {
		b.Closed = true
		return b
	}
	ss.evictLocked()
	b.Head, b.Gap = s.head, s.maxEvicted > after
	i := sort.Search(len(ss.events), func(i int) bool { return ss.events[i].ID > after })
	last := after
	for ; i < len(ss.events) && len(b.Events) < max; i++ {
		if ev := ss.events[i]; ev.Stream == st {
			b.Events = append(b.Events, ev)
			last = ev.ID
		}
	}
	b.Complete = s.kind != KindStandalone && len(s.pending) == 0 && last >= s.head
	return b
}

// Resume is where a Last-Event-ID points.
type Resume struct {
	Stream     StreamID
	Honourable bool  // no event of Stream newer than the id was evicted
	Head       int64 // newest event id of Stream
	Oldest     int64 // oldest retained event id of Stream; 0 if none
	// Evicted is the newest evicted event id of Stream (0 if none): the
	// earliest honourable cursor, from which every retained event of the
	// stream is replayed.
	Evicted int64
}

// Locate resolves a Last-Event-ID to its stream and says whether resuming
// from it would lose events.
func (ss *Session) Locate(id int64) (Resume, error) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.closed {
		return Resume{}, ErrSessionClosed
	}
	if id < 1 || id > ss.last {
		return Resume{}, ErrUnknownEvent
	}
	ss.evictLocked()
	i := sort.Search(len(ss.ranges), func(i int) bool { return ss.ranges[i].last >= id })
	st := ss.ranges[i].stream
	s := ss.streams[st]
	r := Resume{Stream: st, Honourable: s.maxEvicted <= id, Head: s.head, Evicted: s.maxEvicted}
	for _, ev := range ss.events {
		if ev.Stream == st {
			r.Oldest = ev.ID
			break
		}
	}
	return r, nil
}

// Head returns the newest event id of stream st.
func (ss *Session) Head(st StreamID) int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if s := ss.streams[st]; s != nil {
		return s.head
	}
	return 0
}

package store

import (
	"encoding/json"
	"fmt"
	"time"
)

// Journal operations, one per line of the journal file.
const (
	opOpen   = "open"   // a session was created
	opClose  = "close"  // a session ended
	opStream = "stream" // a stream was opened with the requests it owes responses to
	opEvent  = "event"  // an event was appended
	opSettle = "settle" // a request was settled without an event (cancelled, or answered as JSON)
	opKey    = "key"    // an idempotency key was reserved
	opUnkey  = "unkey"  // an idempotency key was released
)

// record is one journal line. Short JSON names keep the file small; Data is
// the event's JSON-RPC message embedded as is.
type record struct {
	Op      string          `json:"op"`
	Session string          `json:"s,omitempty"`
	Version string          `json:"v,omitempty"`
	Client  string          `json:"c,omitempty"`
	At      int64           `json:"t,omitempty"`
	Reason  string          `json:"r,omitempty"`
	Stream  StreamID        `json:"st,omitempty"`
	Kind    StreamKind      `json:"k,omitempty"`
	Reqs    []Request       `json:"q,omitempty"`
	Event   int64           `json:"e,omitempty"`
	Data    json.RawMessage `json:"d,omitempty"`
	Resp    string          `json:"re,omitempty"`
	Key     string          `json:"key,omitempty"`
	// Writer and Owner, in a shared journal: the incarnation of the store
	// that wrote the record, and the replica it belongs to.
	Writer string `json:"w,omitempty"`
	Owner  string `json:"o,omitempty"`
}

// replay applies one journal line during Open.
func (s *Store) replay(line []byte) error {
	var rec record
	if err := json.Unmarshal(line, &rec); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return s.applyRecord(rec)
}

// applyRecord applies one journal record to the store's state, in replay
// or from another replica; the caller holds s.mu or owns s. Records of
// sessions that are no longer live are skipped: the session's close came
// first.
func (s *Store) applyRecord(rec record) error {
	switch rec.Op {
	case opOpen:
		if s.sessions[rec.Session] == nil {
			info := SessionInfo{ID: rec.Session, Version: rec.Version, Client: rec.Client, Created: time.Unix(0, rec.At)}
			s.sessions[rec.Session] = newSession(s, info)
		}
		return nil
	case opKey:
		s.keys[rec.Key] = true
		return nil
	case opUnkey:
		delete(s.keys, rec.Key)
		return nil
	case opClose, opStream, opEvent, opSettle:
	default:
		return fmt.Errorf("unknown op %q", rec.Op)
	}
	ss := s.sessions[rec.Session]
	if ss == nil {
		return nil
	}
	ss.mu.Lock()
	ss.apply(rec)
	ss.mu.Unlock()
	if rec.Op == opClose {
		delete(s.sessions, rec.Session)
	}
	return nil
}

// collectPending lists, after replay, the requests still owed a response.
func (s *Store) collectPending() {
	for _, ss := range s.sessions {
		ss.mu.Lock()
		for id := StreamID(1); id < ss.nextStream; id++ {
			st := ss.streams[id]
			if s.shared != nil && st.owner != s.shared.owner {
				continue // another replica's to resolve
			}
			for _, req := range st.pending {
				s.pending = append(s.pending, Pending{Session: ss, Stream: id, Kind: st.kind, Request: req})
			}
		}
		ss.mu.Unlock()
	}
}

package mcpgo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// boundedStore is an mcp-go server.EventStore that keeps at most limit
// events per session, over all of the session's streams, dropping the
// oldest first. mcp-go ships no bounded store (its InMemoryEventStore keeps
// a session's events until the session ends); this one gives
// ServerConfig.RetentionEvents the reference server's meaning. Event ids
// are store-wide increasing integers, as in InMemoryEventStore. An evicted
// id is unknown to ReplayEventsAfter, which is all the SDK can learn.
type boundedStore struct {
	limit int

	mu       sync.Mutex
	seq      int64
	sessions map[string][]storedEvent // oldest first
}

type storedEvent struct {
	id      int64
	stream  string
	message json.RawMessage
}

var _ server.EventStore = (*boundedStore)(nil)

func newBoundedStore(limit int) *boundedStore {
	return &boundedStore{limit: limit, sessions: map[string][]storedEvent{}}
}

// StoreEvent implements server.EventStore.
func (s *boundedStore) StoreEvent(_ context.Context, sessionID, streamID string, message json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	log := append(s.sessions[sessionID], storedEvent{id: s.seq, stream: streamID, message: slices.Clone(message)})
	if over := len(log) - s.limit; over > 0 {
		log = slices.Delete(log, 0, over)
	}
	s.sessions[sessionID] = log
	return strconv.FormatInt(s.seq, 10), nil
}

// ReplayEventsAfter implements server.EventStore.
func (s *boundedStore) ReplayEventsAfter(_ context.Context, sessionID, lastEventID string, send func(string, json.RawMessage) error) (string, error) {
	id, err := strconv.ParseInt(lastEventID, 10, 64)
	s.mu.Lock()
	log := s.sessions[sessionID]
	i, found := slices.BinarySearchFunc(log, id, func(e storedEvent, id int64) int { return cmp.Compare(e.id, id) })
	if err != nil || !found {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, lastEventID)
	}
	stream := log[i].stream
	var tail []storedEvent
	for _, e := range log[i+1:] {
		if e.stream == stream {
			tail = append(tail, e)
		}
	}
	s.mu.Unlock()
	for _, e := range tail {
		if err := send(strconv.FormatInt(e.id, 10), e.message); err != nil {
			return "", err
		}
	}
	return stream, nil
}

// PurgeSession implements server.EventStore.
func (s *boundedStore) PurgeSession(_ context.Context, sessionID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.sessions, sessionID)
	return nil
}

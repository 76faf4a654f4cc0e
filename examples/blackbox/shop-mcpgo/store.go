package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// boundedStore is an mcp-go EventStore that keeps the newest keep events of
// each stream, as a team writes one to bound its memory. Event ids are
// numbers increasing across the store; a stream remembers every id it
// issued (a few bytes each), its events only the newest keep.
//
// Its replay sends every event still held that is newer than the client's
// Last-Event-ID. That reads as correct and is the silent-loss bug: when
// the events right after the client's cursor were already dropped, the
// client gets the newer ones with no word of the gap.
type boundedStore struct {
	keep int

	mu      sync.Mutex
	seq     int64
	streams map[string]map[string]*boundedStream // session → stream → events
	owner   map[string]map[int64]string          // session → event id → stream
}

type boundedStream struct {
	ids  []int64
	msgs []json.RawMessage
}

func newBoundedStore(keep int) *boundedStore {
	return &boundedStore{keep: keep, streams: map[string]map[string]*boundedStream{}, owner: map[string]map[int64]string{}}
}

func (s *boundedStore) StoreEvent(_ context.Context, session, stream string, msg json.RawMessage) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.streams[session] == nil {
		s.streams[session], s.owner[session] = map[string]*boundedStream{}, map[int64]string{}
	}
	st := s.streams[session][stream]
	if st == nil {
		st = &boundedStream{}
		s.streams[session][stream] = st
	}
	s.seq++
	st.ids = append(st.ids, s.seq)
	st.msgs = append(st.msgs, append(json.RawMessage(nil), msg...))
	if n := len(st.ids) - s.keep; n > 0 {
		st.ids, st.msgs = st.ids[n:], st.msgs[n:]
	}
	s.owner[session][s.seq] = stream
	return strconv.FormatInt(s.seq, 10), nil
}

func (s *boundedStore) ReplayEventsAfter(_ context.Context, session, last string, send func(string, json.RawMessage) error) (string, error) {
	n, err := strconv.ParseInt(last, 10, 64)
	s.mu.Lock()
	stream, ok := s.owner[session][n]
	if err != nil || !ok {
		s.mu.Unlock()
		return "", fmt.Errorf("%w: %s", server.ErrUnknownEventID, last)
	}
	st := s.streams[session][stream]
	var ids []int64
	var msgs []json.RawMessage
	for i, id := range st.ids {
		if id > n {
			ids, msgs = append(ids, id), append(msgs, st.msgs[i])
		}
	}
	s.mu.Unlock()
	for i := range ids {
		if err := send(strconv.FormatInt(ids[i], 10), msgs[i]); err != nil {
			return "", err
		}
	}
	return stream, nil
}

func (s *boundedStore) PurgeSession(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.streams, session)
	delete(s.owner, session)
	return nil
}

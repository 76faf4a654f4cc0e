package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func open(t *testing.T, opts Options) *Store {
	t.Helper()
	s, err := Open(opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func session(t *testing.T, s *Store, id string) *Session {
	t.Helper()
	ss, err := s.CreateSession(SessionInfo{ID: id, Version: "2025-11-25", Client: "c1", Created: time.Now()})
	require.NoError(t, err)
	return ss
}

func req(id int, tool string) Request {
	return Request{ID: json.RawMessage(strconv.Itoa(id)), Method: "tools/call", Tool: tool}
}

func appendN(t *testing.T, ss *Session, st StreamID, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		id, err := ss.Append(st, json.RawMessage(`{"jsonrpc":"2.0","method":"x"}`), "", nil)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	return ids
}

func TestIDsIncreaseAndBelongToOneStream(t *testing.T) {
	s := open(t, Options{})
	ss := session(t, s, "s1")
	a, err := ss.OpenStream(KindSSE, []Request{req(1, "chatty")})
	require.NoError(t, err)
	b, err := ss.OpenStream(KindSSE, []Request{req(2, "chatty")})
	require.NoError(t, err)
	assert.Equal(t, StreamID(1), a)
	assert.Equal(t, StreamID(2), b)

	var want []StreamID
	for i := range 9 {
		st := []StreamID{a, a, b, Standalone}[i%4]
		id, err := ss.Append(st, json.RawMessage(`{}`), "", nil)
		require.NoError(t, err)
		assert.Equal(t, int64(i+1), id)
		want = append(want, st)
	}
	for i, st := range want {
		r, err := ss.Locate(int64(i + 1))
		require.NoError(t, err)
		assert.Equal(t, st, r.Stream, "event %d", i+1)
		assert.True(t, r.Honourable)
	}
	got := ss.Read(a, 0, 100)
	require.Len(t, got.Events, 5)
	for _, ev := range got.Events {
		assert.Equal(t, a, ev.Stream)
	}
	_, err = ss.Locate(0)
	require.ErrorIs(t, err, ErrUnknownEvent)
	_, err = ss.Locate(10)
	require.ErrorIs(t, err, ErrUnknownEvent)
}

func TestRetentionByCount(t *testing.T) {
	s := open(t, Options{RetentionEvents: 3})
	ss := session(t, s, "s1")
	a, _ := ss.OpenStream(KindSSE, []Request{req(1, "chatty")})
	b, _ := ss.OpenStream(KindSSE, []Request{req(2, "chatty")})
	appendN(t, ss, a, 4) // 1..4 on a
	appendN(t, ss, b, 2) // 5..6 on b; retained: 4,5,6

	tests := []struct {
		name       string
		id         int64
		stream     StreamID
		honourable bool
		head       int64
		oldest     int64
		evicted    int64
	}{
		{"evicted events after the cursor", 2, a, false, 4, 4, 3},
		{"cursor at the last evicted id", 3, a, true, 4, 4, 3},
		{"cursor at head", 4, a, true, 4, 4, 3},
		{"other stream untouched", 5, b, true, 6, 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ss.Locate(tc.id)
			require.NoError(t, err)
			assert.Equal(t, Resume{Stream: tc.stream, Honourable: tc.honourable, Head: tc.head, Oldest: tc.oldest, Evicted: tc.evicted}, r)
		})
	}
	got := ss.Read(a, 1, 100)
	assert.True(t, got.Gap)
	assert.Equal(t, int64(4), got.Head)
	got = ss.Read(a, 3, 100)
	assert.False(t, got.Gap)
	require.Len(t, got.Events, 1)

	appendN(t, ss, b, 3) // a fully evicted
	r, err := ss.Locate(4)
	require.NoError(t, err)
	assert.Equal(t, Resume{Stream: a, Honourable: true, Head: 4, Oldest: 0, Evicted: 4}, r, "every event evicted: resuming replays nothing")
}

func TestRetentionByAge(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	s := open(t, Options{RetentionAge: time.Minute, Now: clock})
	ss := session(t, s, "s1")
	a, _ := ss.OpenStream(KindSSE, []Request{req(1, "chatty")})
	appendN(t, ss, a, 2)
	advance(45 * time.Second)
	appendN(t, ss, a, 1)
	advance(30 * time.Second) // events 1 and 2 are now 75 s old

	r, err := ss.Locate(1)
	require.NoError(t, err)
	assert.False(t, r.Honourable)
	assert.Equal(t, int64(3), r.Oldest)
	r, err = ss.Locate(2)
	require.NoError(t, err)
	assert.True(t, r.Honourable)
}

func TestCompleteAndPending(t *testing.T) {
	s := open(t, Options{})
	ss := session(t, s, "s1")
	a, _ := ss.OpenStream(KindSSE, []Request{req(1, "charge"), req(2, "charge")})
	assert.False(t, ss.Read(a, 0, 10).Complete)
	_, err := ss.Append(a, json.RawMessage(`{"id":1}`), "1", nil)
	require.NoError(t, err)
	assert.False(t, ss.Read(a, 0, 10).Complete)
	_, err = ss.Append(a, json.RawMessage(`{"id":1}`), "1", nil)
	require.Error(t, err, "a request is answered once")
	require.NoError(t, ss.Settle(a, "2"))
	b := ss.Read(a, 0, 10)
	assert.True(t, b.Complete)
	assert.False(t, ss.Read(a, 0, 0).Complete, "complete only once the events reach head")
	assert.False(t, ss.Read(Standalone, 0, 10).Complete, "the standalone stream never completes")
}

func TestBeforeHookSeesTheIDFirst(t *testing.T) {
	s := open(t, Options{})
	ss := session(t, s, "s1")
	var seen int64
	id, err := ss.Append(Standalone, nil, "", func(id int64) {
		seen = id
		assert.Empty(t, ss.Read(Standalone, 0, 10).Events, "hook runs before the event is visible")
	})
	require.NoError(t, err)
	assert.Equal(t, id, seen)
}

func TestChangedWakesReaders(t *testing.T) {
	s := open(t, Options{})
	ss := session(t, s, "s1")
	b := ss.Read(Standalone, 0, 10)
	appendN(t, ss, Standalone, 1)
	select {
	case <-b.Changed:
	case <-time.After(time.Second):
		t.Fatal("append did not wake the reader")
	}
	b = ss.Read(Standalone, 0, 10)
	require.NoError(t, ss.Close("deleted"))
	<-b.Changed
	assert.True(t, ss.Read(Standalone, 0, 10).Closed)
	_, err := ss.Append(Standalone, nil, "", nil)
	require.ErrorIs(t, err, ErrSessionClosed)
	assert.Empty(t, s.Sessions())
}

func TestJournalRecovers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := Open(Options{Path: path, RetentionEvents: 4})
	require.NoError(t, err)
	live := session(t, s, "live")
	gone := session(t, s, "gone")
	a, _ := live.OpenStream(KindSSE, []Request{req(1, "charge"), req(2, "chatty")})
	j, _ := live.OpenStream(KindJSON, []Request{req(3, "charge")})
	appendN(t, live, a, 5)
	_, err = live.Append(a, json.RawMessage(`{"id":2}`), "2", nil)
	require.NoError(t, err)
	_, _ = gone.OpenStream(KindSSE, []Request{req(1, "charge")})
	require.NoError(t, gone.Close("expired"))
	fresh, err := s.ReserveKey("k1")
	require.NoError(t, err)
	require.True(t, fresh)
	_, err = s.ReserveKey("k2")
	require.NoError(t, err)
	require.NoError(t, s.ReleaseKey("k2"))
	require.NoError(t, s.Close()) // no graceful flush beyond what Append already made durable

	s2 := open(t, Options{Path: path, RetentionEvents: 4})
	sessions := s2.Sessions()
	require.Len(t, sessions, 1)
	rl := sessions[0]
	assert.Equal(t, "live", rl.Info().ID)
	assert.Equal(t, "c1", rl.Info().Client)

	got := rl.Read(a, 0, 100)
	assert.True(t, got.Gap, "retention applies to the recovered log")
	require.Len(t, got.Events, 4)
	assert.Equal(t, int64(6), got.Head)
	r, err := rl.Locate(1)
	require.NoError(t, err)
	assert.False(t, r.Honourable)

	var pending []string
	for _, p := range s2.Pending() {
		pending = append(pending, p.Stream.String()+"/"+p.Request.Key()+"/"+string(p.Kind))
	}
	assert.ElementsMatch(t, []string{a.String() + "/1/sse", j.String() + "/3/json"}, pending)

	fresh, err = s2.ReserveKey("k1")
	require.NoError(t, err)
	assert.False(t, fresh, "a reserved key survives a restart")
	fresh, err = s2.ReserveKey("k2")
	require.NoError(t, err)
	assert.True(t, fresh, "a released key is free again")

	id, err := rl.Append(a, nil, "", nil)
	require.NoError(t, err)
	assert.Equal(t, int64(7), id, "ids keep increasing after a restart")
	next, err := rl.OpenStream(KindSSE, nil)
	require.NoError(t, err)
	assert.Equal(t, StreamID(3), next)
}

func TestJournalTornTailAndCorruption(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	s, err := Open(Options{Path: path})
	require.NoError(t, err)
	ss := session(t, s, "s1")
	appendN(t, ss, Standalone, 2)
	require.NoError(t, s.Close())

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"op":"event","s":"s1","st":0,"e":3`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	s2 := open(t, Options{Path: path})
	require.Len(t, s2.Sessions(), 1)
	assert.Equal(t, int64(2), s2.Sessions()[0].Head(Standalone), "the torn record is dropped")
	require.NoError(t, s2.Close())

	require.NoError(t, os.WriteFile(path, []byte("{\"op\":\"bogus\"}\n"), 0o644))
	_, err = Open(Options{Path: path})
	require.ErrorContains(t, err, "unknown op")
}

func TestWritesAfterCloseFail(t *testing.T) {
	s, err := Open(Options{Path: filepath.Join(t.TempDir(), "j")})
	require.NoError(t, err)
	ss := session(t, s, "s1")
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, err = ss.Append(Standalone, nil, "", nil)
	require.ErrorIs(t, err, ErrStoreClosed)
	_, err = s.CreateSession(SessionInfo{ID: "s2"})
	require.ErrorIs(t, err, ErrStoreClosed)
}

func TestStreamNames(t *testing.T) {
	assert.Equal(t, "get", Standalone.String())
	assert.Equal(t, "post-12", StreamID(12).String())
}

func TestRangesStayCompact(t *testing.T) {
	s := open(t, Options{RetentionEvents: 10})
	ss := session(t, s, "s1")
	a, _ := ss.OpenStream(KindSSE, nil)
	b, _ := ss.OpenStream(KindSSE, nil)
	appendN(t, ss, a, 500)
	appendN(t, ss, b, 500)
	appendN(t, ss, a, 500)
	ss.mu.Lock()
	ranges := len(ss.ranges)
	ss.mu.Unlock()
	assert.Equal(t, 3, ranges, "one range per run of consecutive ids on a stream, evicted or not")
	for id, want := range map[int64]StreamID{1: a, 500: a, 501: b, 1000: b, 1001: a, 1500: a} {
		r, err := ss.Locate(id)
		require.NoError(t, err)
		assert.Equal(t, want, r.Stream, "event %d", id)
	}
}

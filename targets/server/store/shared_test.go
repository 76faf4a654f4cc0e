package store

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// memJournal is a Shared journal in memory, one per deployment; each
// replica reads it through its own cursor.
type memJournal struct {
	mu      sync.Mutex
	recs    [][]byte
	changed chan struct{}
}

func newMemJournal() *memJournal { return &memJournal{changed: make(chan struct{})} }

// reader is one replica's connection to the journal.
func (m *memJournal) reader() *memReader { return &memReader{m: m} }

type memReader struct {
	m    *memJournal
	next int
}

func (r *memReader) Append(_ context.Context, rec []byte) error {
	r.m.mu.Lock()
	defer r.m.mu.Unlock()
	r.m.recs = append(r.m.recs, append([]byte(nil), rec...))
	close(r.m.changed)
	r.m.changed = make(chan struct{})
	return nil
}

func (r *memReader) Read(ctx context.Context, block time.Duration, fn func([]byte) error) error {
	r.m.mu.Lock()
	recs, changed := r.m.recs[r.next:], r.m.changed
	r.m.mu.Unlock()
	if len(recs) == 0 && block > 0 {
		select {
		case <-changed:
		case <-time.After(block):
		case <-ctx.Done():
		}
		r.m.mu.Lock()
		recs = r.m.recs[r.next:]
		r.m.mu.Unlock()
	}
	for _, rec := range recs {
		r.next++
		if err := fn(rec); err != nil {
			return err
		}
	}
	return nil
}

func (r *memReader) Close() error { return nil }

func openReplica(t *testing.T, j *memJournal, owner string) *Store {
	t.Helper()
	s, err := Open(Options{Shared: j.reader(), Owner: owner})
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSharedJournalLetsAnotherReplicaResume(t *testing.T) {
	j := newMemJournal()
	a, b := openReplica(t, j, "server-1"), openReplica(t, j, "server-2")
	require.True(t, b.Durable())

	ss, err := a.CreateSession(SessionInfo{ID: "sA", Version: "2025-11-25", Created: time.Now()})
	require.NoError(t, err)
	req := Request{ID: json.RawMessage(`2`), Method: "tools/call", Tool: mcp.ToolCharge}
	st, err := ss.OpenStream(KindSSE, []Request{req})
	require.NoError(t, err)
	_, err = ss.Append(st, json.RawMessage(`{"progress":1}`), "", nil)
	require.NoError(t, err)

	require.NoError(t, b.Sync(context.Background()))
	other := b.Session("sA")
	require.NotNil(t, other, "the session another replica opened is known after Sync")
	batch := other.Read(st, 0, 10)
	require.Len(t, batch.Events, 1)

	// The result the first replica appends later reaches a reader on the
	// second through its tailer, waking it.
	_, err = ss.Append(st, json.RawMessage(`{"result":{}}`), req.Key(), nil)
	require.NoError(t, err)
	select {
	case <-batch.Changed:
	case <-time.After(5 * time.Second):
		t.Fatal("the second replica never saw the result")
	}
	batch = other.Read(st, 1, 10)
	require.Len(t, batch.Events, 1)
	assert.True(t, batch.Complete, "the stream owes nothing more")
}

func TestSharedJournalPendingIsTheOwnersOnly(t *testing.T) {
	j := newMemJournal()
	a := openReplica(t, j, "server-1")
	ss, err := a.CreateSession(SessionInfo{ID: "sA", Created: time.Now()})
	require.NoError(t, err)
	_, err = ss.OpenStream(KindSSE, []Request{{ID: json.RawMessage(`2`), Method: "tools/call", Tool: mcp.ToolCharge}})
	require.NoError(t, err)

	tests := []struct {
		owner   string
		pending int
	}{
		{"server-1", 1}, // the owner, restarted: its call was cut short
		{"server-2", 0}, // another replica: the call may still run on server-1
	}
	for _, tt := range tests {
		t.Run(tt.owner, func(t *testing.T) {
			s := openReplica(t, j, tt.owner)
			assert.Len(t, s.Pending(), tt.pending)
			assert.NotNil(t, s.Session("sA"), "every replica replays every session")
		})
	}
	_, err = Open(Options{Shared: j.reader()})
	require.ErrorIs(t, err, errNoOwner)
}

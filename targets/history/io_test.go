package history

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

func TestWriteLoadRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	clock := runclock.New(time.Now().Add(-time.Second))
	w, err := Create(path, clock)
	require.NoError(t, err)
	want := []Record{
		{Client: "c1", Kind: KindInvoke, Call: "c1-1", OrderID: "o1", Tool: "charge", Session: "s", RequestID: "2", Attempt: 1},
		{Client: "c1", Kind: KindGap, Call: "c1-1", Session: "s", RequestID: "2", FromEventID: 4, ToEventID: 9, Reason: "resume_window_exceeded"},
	}
	for _, r := range want {
		require.NoError(t, w.Write(r))
	}
	require.NoError(t, w.Close())
	// A restarted client appends to the same file.
	w, err = Create(path, clock)
	require.NoError(t, err)
	require.NoError(t, w.Write(Record{Client: "c1", Kind: KindOK, Call: "c1-1", TUS: 42}))
	require.NoError(t, w.Close())

	got, err := Load(path)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.GreaterOrEqual(t, got[0].TUS, int64(time.Second/time.Microsecond), "stamped from the base clock")
	assert.Equal(t, int64(9), got[1].ToEventID)
	assert.Equal(t, int64(42), got[2].TUS, "an explicit time is kept")
	assert.True(t, got[2].Kind.IsOutcome())
}

func TestReadErrors(t *testing.T) {
	_, err := Read(strings.NewReader("{\"kind\":\"ok\"}\nnot json\n{\"kind\":\"ok\"}\n"))
	require.ErrorContains(t, err, "line 2")

	recs, err := Read(strings.NewReader("{\"kind\":\"ok\"}\n\n{\"kind\":\"fa"))
	require.NoError(t, err, "a torn last line is dropped")
	assert.Len(t, recs, 1)
}

// TestReadDamagedFiles reads the damaged files every reader of chaosrun's
// JSON-lines files reads alike (internal/jsonl/jsonltest).
func TestReadDamagedFiles(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		recs, err := Read(strings.NewReader(tc.Input(`{"client":"c1","kind":"ok"}`)))
		assert.NoError(t, tc.Check(len(recs), err))
	}
}

// TestCreateAfterATornWrite restarts a client whose history ends in a torn
// line: the line is cut off, and the history reads whole, the new record
// after the old ones.
func TestCreateAfterATornWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(`{"client":"c1","kind":"invoke"}`+"\n"+`{"client":"c1","ki`), 0o644))
	w, err := Create(path, runclock.Start())
	require.NoError(t, err)
	require.NoError(t, w.Write(Record{Client: "c1", Kind: KindClientStart}))
	require.NoError(t, w.Close())
	got, err := Load(path)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, []Kind{KindInvoke, KindClientStart}, []Kind{got[0].Kind, got[1].Kind})
}

func TestConcurrentWritesStayWhole(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, runclock.Start())
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 100 {
				assert.NoError(t, w.Write(Record{Client: string(rune('a' + i)), Kind: KindEvent}))
			}
		}()
	}
	for range 4 {
		<-done
	}
	recs, err := Read(&buf)
	require.NoError(t, err)
	assert.Len(t, recs, 400)
}

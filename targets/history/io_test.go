package history

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

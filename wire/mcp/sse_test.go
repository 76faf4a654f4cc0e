package mcp

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEventRoundTrip(t *testing.T) {
	events := []Event{
		{ID: "1", Retry: 1500 * time.Millisecond},            // priming
		{ID: "2", Data: []byte(`{"jsonrpc":"2.0"}`)},         // message
		{ID: "3", Data: []byte("line one\nline two")},        // multi-line
		{Type: EventClose, Data: []byte(`{"reason":"bye"}`)}, // close
	}
	var buf bytes.Buffer
	for _, ev := range events {
		require.NoError(t, WriteEvent(&buf, ev))
		require.NoError(t, WriteComment(&buf, "keepalive"))
	}
	r := NewEventReader(&buf)
	for _, want := range events {
		got, err := r.Next()
		require.NoError(t, err)
		assert.Equal(t, want.ID, got.ID)
		assert.Equal(t, want.Type, got.Type)
		assert.Equal(t, want.Retry, got.Retry)
		assert.Equal(t, string(want.Data), string(got.Data))
	}
	_, err := r.Next()
	assert.ErrorIs(t, err, io.EOF)
}

func TestEventReaderEndings(t *testing.T) {
	tests := []struct {
		name, in string
		want     error
	}{
		{"clean end", "id: 1\ndata: x\n\n", io.EOF},
		{"cut inside event", "id: 1\ndata: x\n\nid: 2\ndata: y", io.ErrUnexpectedEOF},
		{"only comments", ": hi\n\n: there\n", io.EOF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewEventReader(strings.NewReader(tc.in))
			var err error
			for err == nil {
				_, err = r.Next()
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func TestActivityCountsComments(t *testing.T) {
	r := NewEventReader(strings.NewReader(": k\n\n: k\n\nid: 1\ndata: x\n\n"))
	n := 0
	r.OnActivity = func() { n++ }
	_, err := r.Next()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 5)
}

func TestWriteEventRejectsNewlineInID(t *testing.T) {
	require.Error(t, WriteEvent(io.Discard, Event{ID: "1\n2"}))
}

func FuzzEventReader(f *testing.F) {
	f.Add([]byte("id: 1\nretry: 10\ndata: {}\n\n"))
	f.Add([]byte(": c\n\nevent: close\ndata:\n\n"))
	f.Add([]byte("data"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewEventReader(bytes.NewReader(b))
		for range 1000 {
			ev, err := r.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrEventTooLarge) {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			var out bytes.Buffer
			if err := WriteEvent(&out, ev); err != nil {
				return // ids with newlines cannot be re-framed
			}
			again, err := NewEventReader(&out).Next()
			require.NoError(t, err)
			require.Equal(t, ev.ID, again.ID)
			require.Equal(t, string(ev.Data), string(again.Data))
		}
	})
}

func TestEventNumber(t *testing.T) {
	for id, want := range map[string]int64{"": 0, "17": 17, "abc_3": 3, "x": 0, "s-12": 12, "-4": -4} {
		assert.Equal(t, want, EventNumber(id), id)
	}
}

func FuzzEventNumber(f *testing.F) {
	for _, s := range []string{"1", "a_2", "", "99999999999999999999", "_"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		_ = EventNumber(id)
	})
}

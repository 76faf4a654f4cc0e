package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func scanAll(chunks ...string) []sseEvent {
	var out []sseEvent
	s := &eventScanner{emit: func(ev sseEvent) {
		ev.Data = append([]byte(nil), ev.Data...)
		out = append(out, ev)
	}}
	for _, c := range chunks {
		s.feed([]byte(c))
	}
	return out
}

func TestEventScanner(t *testing.T) {
	tests := []struct {
		name, in string
		want     []sseEvent
	}{
		{"data", "data: {}\n\n", []sseEvent{{Data: []byte("{}")}}},
		{"id name data", "event: message\nid: s_3\ndata: x\n\n", []sseEvent{{ID: "s_3", HasID: true, Name: "message", Data: []byte("x")}}},
		{"priming event", "event: prime\nid: s_0\ndata: \n\n", []sseEvent{{ID: "s_0", HasID: true, Name: "prime"}}},
		{"multi-line data", "data: a\ndata: b\n\n", []sseEvent{{Data: []byte("a\nb")}}},
		{"crlf", "id: 7\r\ndata: x\r\n\r\n", []sseEvent{{ID: "7", HasID: true, Data: []byte("x")}}},
		{"comment only", ": ok\n\n", nil},
		{"retry only", "retry: 10\n\n", nil},
		{"no space after colon", "data:x\n\n", []sseEvent{{Data: []byte("x")}}},
		{"unterminated", "data: x\n", nil},
		{"two events", "id: 1\ndata: a\n\nid: 2\ndata: b\n\n", []sseEvent{
			{ID: "1", HasID: true, Data: []byte("a")}, {ID: "2", HasID: true, Data: []byte("b")}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, scanAll(tc.in))
			for i := range len(tc.in) {
				assert.Equal(t, tc.want, scanAll(tc.in[:i], tc.in[i:]), "split at %d", i)
			}
		})
	}
}

func TestEventScannerStopsOnHugeLines(t *testing.T) {
	got := scanAll("data: "+strings.Repeat("x", 5<<20)+"\n\n", "data: y\n\n")
	assert.Empty(t, got, "an oversized event stops the scanner for good")
}

func TestParseEventID(t *testing.T) {
	tests := map[string]int64{
		"17": 17, "ABCDEF_0": 0, "ABCDEF_12": 12, "a_b_3": 3, "": 0, "x": 0, "-4": 0, "s_-1": 0,
		"99999999999999999999": 0, "mcp-session-1": 0,
	}
	for in, want := range tests {
		assert.Equal(t, want, ParseEventID(in), in)
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{io.EOF, "eof"},
		{io.ErrUnexpectedEOF, "eof"},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), "reset"},
		{&net.OpError{Op: "write", Err: syscall.EPIPE}, "reset"},
		{os.ErrDeadlineExceeded, "timeout"},
		{context.Canceled, "error"},
		{errors.New("boom"), "error"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Classify(tc.err), "%v", tc.err)
	}
}

func FuzzEventScanner(f *testing.F) {
	for _, s := range []string{"data: {}\n\n", "id: 1\r\ndata: a\r\ndata: b\r\n\r\n", ": c\n\nevent: e\n\n", "\n\n\n"} {
		f.Add([]byte(s), uint(3))
	}
	f.Fuzz(func(t *testing.T, in []byte, split uint) {
		whole := scanAll(string(in))
		at := int(split % uint(len(in)+1))
		require.Equal(t, whole, scanAll(string(in[:at]), string(in[at:])), "the split point must not matter")
		for _, ev := range whole {
			require.NotContains(t, ev.ID, "\n")
		}
	})
}

func FuzzParseEventID(f *testing.F) {
	for _, s := range []string{"1", "S_2", "", "_", "a_-1", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		require.GreaterOrEqual(t, ParseEventID(id), int64(0))
	})
}

func BenchmarkEventScanner(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, "event: message\nid: STREAM_%d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","+
			"\"params\":{\"progressToken\":\"c1\",\"progress\":%d,\"total\":1000}}\n\n", i, i)
	}
	in := []byte(sb.String())
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		s := &eventScanner{emit: func(sseEvent) { n++ }}
		for off := 0; off < len(in); off += 4096 {
			s.feed(in[off:min(off+4096, len(in))])
		}
		if n != 1000 {
			b.Fatalf("%d events", n)
		}
	}
}

package observer_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// TestMalformedTrafficIsRecordedAndPassed pushes traffic the observer
// cannot read through a tap: every byte passes, and the record says what
// was not understood.
func TestMalformedTrafficIsRecordedAndPassed(t *testing.T) {
	const get = "GET /mcp HTTP/1.1\r\n\r\n"
	bigEvent := "data: " + strings.Repeat("x", 10<<20) + "\n\n"
	cases := []struct {
		name     string
		up, down string
		want     func(t *testing.T, recs []wire.Record)
	}{
		{
			name: "a body that is not JSON",
			up:   post("{not json"), down: jsonResponse("neither"),
			want: func(t *testing.T, recs []wire.Record) {
				req := only(recs, kind(wire.KindRequest, 0))
				require.Len(t, req, 1)
				require.Len(t, req[0].Messages, 1)
				assert.Contains(t, req[0].Messages[0].Problem, "invalid JSON-RPC message")
				resp := only(recs, kind(wire.KindResponse, 0))
				require.Len(t, resp, 1)
				assert.Contains(t, resp[0].Messages[0].Problem, "invalid JSON-RPC message")
			},
		},
		{
			name: "an SSE frame cut in half",
			up:   get, down: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + progressEvent("1", 1) + "id: 2\ndata: {\"json",
			want: func(t *testing.T, recs []wire.Record) {
				assert.Len(t, only(recs, kind(wire.KindEvent, 0)), 1)
				cut := only(recs, kind(wire.KindMalformed, 0))
				require.Len(t, cut, 1)
				assert.Equal(t, "SSE event cut by the end of the body", cut[0].Problem)
				assert.Equal(t, int64(len("id: 2\ndata: {\"json")), cut[0].Size)
			},
		},
		{
			name: "a 10 MB event",
			up:   get, down: sseHead + chunked(bigEvent[:3<<20], bigEvent[3<<20:], progressEvent("2", 2)),
			want: func(t *testing.T, recs []wire.Record) {
				events := only(recs, kind(wire.KindEvent, 0))
				require.Len(t, events, 2)
				assert.Equal(t, int64(10<<20), events[0].Size)
				assert.Contains(t, events[0].Problem, "event data over")
				assert.Empty(t, events[0].Messages)
				assert.Equal(t, float64(2), *events[1].Messages[0].Progress, "the stream is read on")
			},
		},
		{
			name: "a header section over the bound",
			up:   "GET / HTTP/1.1\r\nX-Big: " + strings.Repeat("b", observer.MaxHeaderBytes) + "\r\n\r\n", down: "HTTP/1.1 431 Too Large\r\n\r\n",
			want: func(t *testing.T, recs []wire.Record) {
				bad := only(recs, kind(wire.KindMalformed, 0))
				require.Len(t, bad, 1)
				assert.Equal(t, fmt.Sprintf("header section over %d bytes", observer.MaxHeaderBytes), bad[0].Problem)
				assert.Len(t, only(recs, kind(wire.KindResponse, 0)), 1, "the answer is still read")
			},
		},
		{
			name: "bytes that are not HTTP",
			up:   "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03", down: "\x15\x03\x03\x00\x02\x02\x28",
			want: func(t *testing.T, recs []wire.Record) {
				bad := only(recs, kind(wire.KindMalformed, 0))
				require.Len(t, bad, 2, "one for each direction")
				assert.Contains(t, bad[0].Problem+bad[1].Problem, "not an HTTP/1.x request")
				assert.Contains(t, bad[0].Problem+bad[1].Problem, "not an HTTP/1.x response")
			},
		},
		{
			name: "an HTTP/2 preface",
			up:   "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00", down: "\x00\x00\x00\x04\x01\x00\x00\x00\x00",
			want: func(t *testing.T, recs []wire.Record) {
				bad := only(recs, func(r wire.Record) bool { return r.Kind == wire.KindMalformed && strings.Contains(r.Problem, "HTTP/2") })
				assert.Len(t, bad, 1)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.want(t, passBoth(t, wire.EdgeServer, tc.up, tc.down, whole, whole))
		})
	}
}

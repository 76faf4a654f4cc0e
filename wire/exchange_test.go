package wire_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire"
)

func request(conn, x, n, tus int64) wire.Record {
	return wire.Record{N: n, TUS: tus, Edge: wire.EdgeServer, Conn: conn, Exchange: x, Kind: wire.KindRequest, Method: "POST"}
}

func response(conn, x int64, status int, contentType string) wire.Record {
	return wire.Record{Edge: wire.EdgeServer, Conn: conn, Exchange: x, Kind: wire.KindResponse, Status: status,
		Header: &wire.Header{ContentType: contentType}}
}

func of(kind wire.Kind, conn, x, tus int64) wire.Record {
	return wire.Record{TUS: tus, Edge: wire.EdgeServer, Conn: conn, Exchange: x, Kind: kind}
}

// TestExchangesPairRecords follows the records of exchanges to what each
// shows: its request, its answer, whether it is a stream, and its end.
func TestExchangesPairRecords(t *testing.T) {
	tests := []struct {
		name string
		recs []wire.Record
		want wire.Exchange // of the exchange of the last record
	}{
		{"a request alone", []wire.Record{request(1, 1, 3, 10)},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST"}},
		{"answered with JSON: done, though no record ends it", []wire.Record{request(1, 1, 3, 10), response(1, 1, 200, "application/json")},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 200, ContentType: "application/json"}},
		{"a stream is open until its body ends", []wire.Record{request(1, 1, 3, 10), response(1, 1, 200, "text/event-stream"),
			of(wire.KindEvent, 1, 1, 12)},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 200, ContentType: "text/event-stream", SSE: true}},
		{"a stream's media type in any case, with parameters", []wire.Record{request(1, 1, 3, 10),
			response(1, 1, 200, " Text/Event-Stream ; charset=utf-8")},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 200,
				ContentType: " Text/Event-Stream ; charset=utf-8", SSE: true}},
		{"no stream by a prefix", []wire.Record{request(1, 1, 3, 10), response(1, 1, 200, "text/event-streams")},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 200, ContentType: "text/event-streams"}},
		{"the stream's end", []wire.Record{request(1, 1, 3, 10), response(1, 1, 200, "text/event-stream"),
			of(wire.KindBodyEnd, 1, 1, 15)},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 200, ContentType: "text/event-stream", SSE: true,
				Ended: true, EndUS: 15}},
		{"the answer before its request", []wire.Record{response(1, 1, 202, ""), of(wire.KindComment, 1, 1, 11), request(1, 1, 3, 10)},
			wire.Exchange{Requested: true, N: 3, TUS: 10, Method: "POST", Answered: true, Status: 202}},
		{"the same x on another connection is another exchange", []wire.Record{request(1, 1, 3, 10), response(1, 1, 200, "text/event-stream"),
			request(2, 1, 4, 11)},
			wire.Exchange{Requested: true, N: 4, TUS: 11, Method: "POST"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s wire.Exchanges
			var got *wire.Exchange
			for i := range tc.recs {
				got = s.Observe(&tc.recs[i])
			}
			require.NotNil(t, got)
			last := tc.recs[len(tc.recs)-1]
			tc.want.Key = last.ExchangeKey()
			assert.Equal(t, tc.want, *got)
			assert.Equal(t, tc.want.Ended || tc.want.Answered && !tc.want.SSE, got.Done())
		})
	}
}

// TestExchangesAreOneAcrossTheirRecords shows that every record of an
// exchange returns the same exchange, and that edges, connections and
// requests each tell exchanges apart.
func TestExchangesAreOneAcrossTheirRecords(t *testing.T) {
	var s wire.Exchanges
	req := request(1, 1, 1, 0)
	x := s.Observe(&req)
	for _, r := range []wire.Record{response(1, 1, 200, "text/event-stream"), of(wire.KindEvent, 1, 1, 1), of(wire.KindComment, 1, 1, 2)} {
		assert.Same(t, x, s.Observe(&r), "%s record", r.Kind)
	}
	client := request(1, 1, 2, 3)
	client.Edge = wire.EdgeClient
	for _, r := range []wire.Record{client, request(2, 1, 3, 3), request(1, 2, 4, 3)} {
		assert.NotSame(t, x, s.Observe(&r), "%s conn %d x %d", r.Edge, r.Conn, r.Exchange)
	}
	for _, r := range []wire.Record{{Kind: wire.KindOpen, Edge: wire.EdgeServer, Conn: 1}, {Kind: wire.KindMalformed, Edge: wire.EdgeServer, Conn: 1}} {
		assert.Nil(t, s.Observe(&r), "a %s record of no exchange", r.Kind)
	}
}

// TestExchangesEndAtTheirConnectionsClose shows that a close ends every
// exchange of its connection at its edge not ended yet, and only those,
// and forgets them.
func TestExchangesEndAtTheirConnectionsClose(t *testing.T) {
	var s wire.Exchanges
	recs := []wire.Record{
		request(1, 1, 1, 10), response(1, 1, 200, "text/event-stream"), of(wire.KindBodyEnd, 1, 1, 20), // ended at 20
		request(1, 2, 2, 30), response(1, 2, 200, "application/json"), // answered whole: ends at the close
		request(1, 3, 3, 40), response(1, 3, 200, "text/event-stream"), // open
		request(2, 1, 4, 50), // another connection
	}
	xs := map[int64]*wire.Exchange{}
	for i := range recs {
		x := s.Observe(&recs[i])
		xs[x.N] = x
	}
	other := request(1, 9, 9, 0)
	other.Edge = wire.EdgeClient
	otherX := s.Observe(&other)

	closed := wire.Record{Kind: wire.KindClose, TUS: 60, Edge: wire.EdgeServer, Conn: 1, End: wire.EndRST, By: wire.SideServer}
	assert.Nil(t, s.Observe(&closed))
	assert.Equal(t, int64(20), xs[1].EndUS, "a stream that ended keeps its end")
	for _, n := range []int64{2, 3} {
		assert.True(t, xs[n].Ended && xs[n].Done(), "exchange %d", n)
		assert.Equal(t, int64(60), xs[n].EndUS, "exchange %d", n)
	}
	assert.False(t, xs[4].Ended, "the other connection's exchange")
	assert.False(t, otherX.Ended, "the same connection at the other edge")

	late := of(wire.KindEvent, 1, 3, 70)
	again := s.Observe(&late)
	assert.NotSame(t, xs[3], again, "the close forgot its exchanges: a later record starts a new one")
	assert.False(t, again.Requested)
	event := of(wire.KindEvent, 2, 1, 70)
	assert.Same(t, xs[4], s.Observe(&event))
}

// TestExchangesForget shows that a forgotten exchange is gone from its
// connection too: the connection's close no longer ends it.
func TestExchangesForget(t *testing.T) {
	var s wire.Exchanges
	a, b := request(1, 1, 1, 10), request(1, 2, 2, 20)
	x, y := s.Observe(&a), s.Observe(&b)
	s.Forget(x)
	s.Forget(x)
	closed := wire.Record{Kind: wire.KindClose, TUS: 30, Edge: wire.EdgeServer, Conn: 1, End: wire.EndFIN, By: wire.SideClient}
	s.Observe(&closed)
	assert.False(t, x.Ended, "forgotten before the close")
	assert.True(t, y.Ended)

	again := request(1, 1, 3, 40)
	z := s.Observe(&again)
	assert.NotSame(t, x, z)
	s.Forget(x) // an exchange forgotten before leaves the new one of its key alone
	event := of(wire.KindEvent, 1, 1, 50)
	assert.Same(t, z, s.Observe(&event))
}

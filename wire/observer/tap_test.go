package observer_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// chunked frames parts as a chunked body, with its final chunk.
func chunked(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func post(body string) string {
	return "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
		fmt.Sprint(len(body)) + "\r\n\r\n" + body
}

func jsonResponse(body string) string {
	return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
		fmt.Sprint(len(body)) + "\r\n\r\n" + body
}

const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"

func progressEvent(id string, n int) string {
	return fmt.Sprintf("id: %s\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\","+
		"\"params\":{\"progressToken\":7,\"progress\":%d,\"total\":9}}\n\n", id, n)
}

// writeChunked writes b in random pieces, pausing now and then so that
// the pieces reach the reader as separate segments.
func writeChunked(w io.Writer, b []byte, rng *rand.Rand) error {
	for len(b) > 0 {
		n := 1 + rng.IntN(min(len(b), 3000))
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
		if rng.IntN(6) == 0 {
			time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
		}
	}
	return nil
}

func TestBytesPassUnchanged(t *testing.T) {
	binary := func(n int, seed uint64) string {
		b := make([]byte, n)
		r := rand.New(rand.NewPCG(seed, seed))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return string(b)
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"c1"}}}`
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty","arguments":{"events":3}}}`
	var stream strings.Builder
	for i := range 50 {
		stream.WriteString(progressEvent(fmt.Sprint(i+1), i+1))
	}
	cases := []struct {
		name     string
		up, down string
	}{
		{name: "json exchange", up: post(init), down: jsonResponse(`{"jsonrpc":"2.0","id":1,"result":{}}`)},
		{name: "sse stream", up: post(call), down: sseHead + chunked(": keepalive\n\n", stream.String(), "id: 99\ndata: {}\n\n")},
		{name: "keep-alive and pipelined", up: post(init) + "GET /mcp HTTP/1.1\r\nLast-Event-ID: 4\r\n\r\n" + post(call),
			down: jsonResponse(`{}`) + "HTTP/1.1 204 No Content\r\n\r\n" + sseHead + chunked(stream.String())},
		{name: "chunked request", up: "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(call[:10], call[10:]),
			down: "HTTP/1.1 100 Continue\r\n\r\n" + jsonResponse(`{"jsonrpc":"2.0","id":2,"result":{"isError":true}}`)},
		{name: "close-delimited sse", up: "GET /mcp HTTP/1.1\r\n\r\n", down: "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + stream.String()},
		{name: "garbage", up: "hello there\r\n\r\n" + binary(5000, 1), down: "nope\n" + binary(7000, 2)},
		{name: "binary", up: binary(200<<10, 3), down: binary(300<<10, 4)},
		{name: "http2 preface", up: "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + binary(1000, 5), down: binary(1000, 6)},
		{name: "large event", up: post(call), down: sseHead + chunked("data: "+strings.Repeat("x", 1<<20)+"\n\n")},
		{name: "nothing", up: "", down: ""},
	}
	for _, tc := range cases {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%s/%d", tc.name, seed), func(t *testing.T) {
				t.Parallel()
				pieces := func(stream uint64) writer {
					return func(w io.Writer, b []byte) error { return writeChunked(w, b, rand.New(rand.NewPCG(seed, stream))) }
				}
				recs := passBoth(t, wire.EdgeClient, tc.up, tc.down, pieces(2), pieces(1))
				cl := only(recs, kind(wire.KindClose, 0))[0]
				assert.Equal(t, int64(len(tc.up)), cl.BytesUp)
				assert.Equal(t, int64(len(tc.down)), cl.BytesDown)
				assert.Equal(t, wire.EndFIN, cl.End)
			})
		}
	}
}

// TestStreamPassesEventByEvent serves a stream whose second event is
// written only once the client has read the first through the tap: a tap
// that held bytes back would deadlock it.
func TestStreamPassesEventByEvent(t *testing.T) {
	first := make(chan struct{})
	upstream := serveTCP(t, func(c *net.TCPConn) {
		_, err := c.Read(make([]byte, 4096))
		assert.NoError(t, err)
		_, err = io.WriteString(c, sseHead+chunked(progressEvent("1", 1))[:len(chunked(progressEvent("1", 1)))-5])
		assert.NoError(t, err)
		select {
		case <-first:
		case <-time.After(waitFor):
			t.Error("the client never got the first event")
			return
		}
		_, err = io.WriteString(c, chunked(progressEvent("2", 2)))
		assert.NoError(t, err)
	})
	sink := newCollect(t)
	tap := startTap(t, wire.EdgeServer, upstream, sink)
	c := dial(t, tap.Addr())
	_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\nAccept: text/event-stream\r\n\r\n")
	require.NoError(t, err)

	var got []byte
	buf := make([]byte, 4096)
	for !bytes.Contains(got, []byte("\"progress\":1,")) {
		n, err := c.Read(buf)
		require.NoError(t, err, "the first event never arrived")
		got = append(got, buf[:n]...)
	}
	recs := sink.await(t, "the first event", kind(wire.KindEvent, 0))
	assert.Len(t, only(recs, kind(wire.KindEvent, 0)), 1, "the second event is not written yet")
	close(first)
	for !bytes.Contains(got, []byte("0\r\n\r\n")) {
		n, err := c.Read(buf)
		require.NoError(t, err, "the second event never arrived")
		got = append(got, buf[:n]...)
	}
	recs = sink.await(t, "the body's end", kind(wire.KindBodyEnd, 0))
	events := only(recs, kind(wire.KindEvent, 0))
	require.Len(t, events, 2)
	assert.Equal(t, []string{"1", "2"}, []string{events[0].EventID, events[1].EventID})
}

// lingerReset closes c with an RST.
func lingerReset(t testing.TB, c *net.TCPConn) {
	t.Helper()
	require.NoError(t, c.SetLinger(0))
	require.NoError(t, c.Close())
}

func TestEndsAreMirrored(t *testing.T) {
	const request = "GET /mcp HTTP/1.1\r\n\r\n"
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	cases := []struct {
		name string
		// server runs the upstream side after it has read the request.
		server func(t *testing.T, c *net.TCPConn)
		// client runs after the request was written and returns what it
		// read and the error that ended its reading.
		client func(t *testing.T, c *net.TCPConn) ([]byte, error)
		want   error // the client's read error
		end    wire.End
		by     wire.Side
	}{
		{
			name: "upstream reset",
			server: func(t *testing.T, c *net.TCPConn) {
				_, err := io.WriteString(c, answer[:10])
				assert.NoError(t, err)
				time.Sleep(20 * time.Millisecond) // let the bytes pass before the reset
				lingerReset(t, c)
			},
			want: syscall.ECONNRESET, end: wire.EndRST, by: wire.SideServer,
		},
		{
			name: "upstream fin",
			server: func(t *testing.T, c *net.TCPConn) {
				_, err := io.WriteString(c, answer)
				assert.NoError(t, err)
				assert.NoError(t, c.Close())
			},
			want: io.EOF, end: wire.EndFIN, by: wire.SideServer,
		},
		{
			name: "client half-close keeps the response flowing",
			server: func(t *testing.T, c *net.TCPConn) {
				rest, err := io.ReadAll(c) // returns at the client's FIN, passed on
				assert.NoError(t, err)
				assert.Empty(t, rest)
				_, err = io.WriteString(c, answer)
				assert.NoError(t, err)
			},
			client: func(t *testing.T, c *net.TCPConn) ([]byte, error) {
				require.NoError(t, c.CloseWrite())
				return readAll(c)
			},
			want: io.EOF, end: wire.EndFIN, by: wire.SideClient,
		},
		{
			name: "client reset",
			server: func(t *testing.T, c *net.TCPConn) {
				_, err := io.ReadAll(c)
				assert.ErrorIs(t, err, syscall.ECONNRESET, "the client's reset reaches the server")
			},
			client: func(t *testing.T, c *net.TCPConn) ([]byte, error) {
				lingerReset(t, c)
				return nil, syscall.ECONNRESET
			},
			want: syscall.ECONNRESET, end: wire.EndRST, by: wire.SideClient,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served := make(chan struct{})
			upstream := serveTCP(t, func(c *net.TCPConn) {
				defer close(served)
				buf := make([]byte, len(request))
				_, err := io.ReadFull(c, buf)
				assert.NoError(t, err)
				tc.server(t, c)
			})
			sink := newCollect(t)
			tap := startTap(t, wire.EdgeClient, upstream, sink)
			c := dial(t, tap.Addr())
			_, err := io.WriteString(c, request)
			require.NoError(t, err)
			client := tc.client
			if client == nil {
				client = func(_ *testing.T, c *net.TCPConn) ([]byte, error) { return readAll(c) }
			}
			got, err := client(t, c)
			require.ErrorIs(t, err, tc.want)
			if tc.want == io.EOF {
				assert.Equal(t, answer, string(got))
				require.NoError(t, c.Close(), "the client closes its half too")
			}
			<-served

			recs := sink.await(t, "close", kind(wire.KindClose, 0))
			cl := only(recs, kind(wire.KindClose, 0))[0]
			assert.Equal(t, tc.end, cl.End, cl.Detail)
			assert.Equal(t, tc.by, cl.By)
			assert.Equal(t, int64(len(request)), cl.BytesUp)
			assert.Equal(t, int64(len(got)), cl.BytesDown)
		})
	}
}

// readAll reads until an error, returning it (io.EOF included).
func readAll(c net.Conn) ([]byte, error) {
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

func TestRefusedUpstreamIsAReset(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	refused := ln.Addr().String()
	require.NoError(t, ln.Close())

	sink := newCollect(t)
	tap := startTap(t, wire.EdgeClient, refused, sink) // the server edge has no socket: nothing reached the server
	c, err := net.Dial("tcp", tap.Addr())
	if err == nil { // the reset can come before the dial returns, and then fails it
		t.Cleanup(func() { c.Close() })
		_, err = readAll(c)
	}
	require.ErrorIs(t, err, syscall.ECONNRESET)
	recs := sink.await(t, "close", kind(wire.KindClose, 0))
	require.Equal(t, []wire.Kind{wire.KindOpen, wire.KindClose}, kinds(recs))
	cl := recs[1]
	assert.Equal(t, wire.EndRST, cl.End)
	assert.Equal(t, wire.SideServer, cl.By)
	assert.Contains(t, cl.Detail, "connection refused")
	assert.NotEmpty(t, recs[0].Peer)
}

func kinds(recs []wire.Record) []wire.Kind {
	var out []wire.Kind
	for _, r := range recs {
		out = append(out, r.Kind)
	}
	return out
}

func TestCloseEndsOpenConnectionsAndWaits(t *testing.T) {
	upstream := serveTCP(t, func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) })
	sink := newCollect(t)
	tap := startTap(t, wire.EdgeClient, upstream, sink)
	const conns = 3
	var cs []*net.TCPConn
	for range conns {
		c := dial(t, tap.Addr())
		_, err := io.WriteString(c, "GET / HTTP/1.1\r\n\r\n")
		require.NoError(t, err)
		cs = append(cs, c)
	}
	sink.awaitN(t, "a request on each connection", kind(wire.KindRequest, 0), conns)

	require.NoError(t, tap.Close())
	sink.closed()
	require.NoError(t, tap.Close(), "Close is idempotent")
	closes := only(sink.all(), kind(wire.KindClose, 0))
	require.Len(t, closes, conns, "every connection's close is recorded before Close returns")
	for _, cl := range closes {
		assert.Equal(t, wire.EndObserver, cl.End)
		assert.Empty(t, cl.By)
	}
	for _, c := range cs {
		_, err := readAll(c)
		assert.Error(t, err, "the connection is closed")
	}
	_, err := net.Dial("tcp", tap.Addr())
	assert.Error(t, err, "the tap no longer listens")
}

func TestStartRejectsBadConfig(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		ln      net.Listener
		cfg     observer.Config
		wantErr string
	}{
		{name: "no listener", ctx: context.Background(), cfg: observer.Config{Upstream: "x:1", Relay: relay}, wantErr: "no listener"},
		{name: "no relay", ctx: context.Background(), ln: ln, cfg: observer.Config{Upstream: "x:1"}, wantErr: "no relay"},
		{name: "no upstream", ctx: context.Background(), ln: ln, cfg: observer.Config{Relay: relay}, wantErr: "no upstream"},
		{name: "ended context", ctx: cancelled, ln: ln, cfg: observer.Config{Upstream: "x:1", Relay: relay}, wantErr: "context canceled"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := observer.Start(tc.ctx, tc.ln, tc.cfg)
			require.ErrorContains(t, err, tc.wantErr)
		})
	}
}

func TestContextEndClosesTheTap(t *testing.T) {
	upstream := serveTCP(t, func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	sink := newCollect(t)
	tap, err := observer.Start(ctx, ln, observer.Config{Upstream: upstream, Relay: relay, Sink: atEdge(wire.EdgeClient, sink)})
	require.NoError(t, err)
	c := dial(t, tap.Addr())
	sink.await(t, "open", kind(wire.KindOpen, 0))

	cancel()
	_, err = readAll(c)
	require.Error(t, err, "the tap closed the connection")
	require.NoError(t, tap.Close(), "Close after the context ended")
	cl := sink.await(t, "close", kind(wire.KindClose, 0))
	assert.Equal(t, wire.EndObserver, only(cl, kind(wire.KindClose, 0))[0].End)
}

// TestRefuseAndAccept refuses new connections at the tap's address while
// one already open keeps flowing, then accepts on the same address again.
func TestRefuseAndAccept(t *testing.T) {
	upstream := serveTCP(t, func(c *net.TCPConn) { _, _ = io.Copy(c, c) })
	sink := newCollect(t)
	tap := startTap(t, wire.EdgeClient, upstream, sink)
	addr := tap.Addr()
	echo := func(c net.Conn, s string) {
		t.Helper()
		_, err := io.WriteString(c, s)
		require.NoError(t, err)
		got := make([]byte, len(s))
		_, err = io.ReadFull(c, got)
		require.NoError(t, err)
		require.Equal(t, s, string(got))
	}
	open := dial(t, addr)
	echo(open, "before")

	require.NoError(t, tap.Refuse())
	require.NoError(t, tap.Refuse(), "Refuse is idempotent")
	_, err := net.Dial("tcp", addr)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a new connection is refused")
	echo(open, "during") // the open one is the fault proxy's to end

	require.NoError(t, tap.Accept())
	require.NoError(t, tap.Accept(), "Accept while accepting does nothing")
	assert.Equal(t, addr, tap.Addr())
	again := dial(t, addr)
	echo(again, "after")
	opens := only(sink.awaitN(t, "two connections", kind(wire.KindOpen, 0), 2), kind(wire.KindOpen, 0))
	assert.Equal(t, []int64{1, 2}, []int64{opens[0].Conn, opens[1].Conn}, "the refused connection never reached the tap")

	require.NoError(t, open.CloseWrite())
	_, err = readAll(open)
	require.ErrorIs(t, err, io.EOF)
	sink.await(t, "the first connection's close", kind(wire.KindClose, 1))
}

func TestCloseWhileRefusing(t *testing.T) {
	upstream := serveTCP(t, func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) })
	sink := newCollect(t)
	tap := startTap(t, wire.EdgeServer, upstream, sink)
	c := dial(t, tap.Addr())
	sink.await(t, "open", kind(wire.KindOpen, 0))
	require.NoError(t, tap.Refuse())

	require.NoError(t, tap.Close())
	_, err := readAll(c)
	require.Error(t, err, "Close ends the connections that Refuse left open")
	cl := only(sink.all(), kind(wire.KindClose, 0))
	require.Len(t, cl, 1)
	assert.Equal(t, wire.EndObserver, cl[0].End)
	require.ErrorIs(t, tap.Refuse(), observer.ErrClosed)
	require.ErrorIs(t, tap.Accept(), observer.ErrClosed)
	_, err = net.Dial("tcp", tap.Addr())
	require.Error(t, err, "a closed tap does not listen again")
}

// panicky is a sink that panics on the first record of each kind in left.
type panicky struct {
	*collect
	mu   sync.Mutex
	left map[wire.Kind]bool
}

func (p *panicky) Observe(r *wire.Record) {
	p.mu.Lock()
	boom := p.left[r.Kind]
	delete(p.left, r.Kind)
	p.mu.Unlock()
	if boom {
		panic("sink broke")
	}
	p.collect.Observe(r)
}

// TestPanicStopsRecordingNotRelaying: a panic while a direction is
// recorded (here the sink's, on the open record and on the first event)
// stops the recording of that direction, says so in a record, and lets
// every byte pass.
func TestPanicStopsRecordingNotRelaying(t *testing.T) {
	down := sseHead + chunked(progressEvent("1", 1), progressEvent("2", 2)+progressEvent("3", 3))
	upstream := serveTCP(t, func(c *net.TCPConn) {
		_, err := c.Read(make([]byte, 4096))
		assert.NoError(t, err)
		assert.NoError(t, whole(c, []byte(down)))
		assert.NoError(t, c.CloseWrite())
		_, _ = io.Copy(io.Discard, c)
	})
	sink := &panicky{collect: newCollect(t), left: map[wire.Kind]bool{wire.KindOpen: true, wire.KindEvent: true}}
	tap := startTap(t, wire.EdgeServer, upstream, sink)
	c := dial(t, tap.Addr())
	_, err := io.WriteString(c, "GET /mcp HTTP/1.1\r\n\r\n")
	require.NoError(t, err)
	got, err := io.ReadAll(c)
	require.NoError(t, err)
	assert.Equal(t, down, string(got), "every byte passed")
	require.NoError(t, c.CloseWrite())

	recs := sink.await(t, "close", kind(wire.KindClose, 0))
	assert.Equal(t, []wire.Kind{wire.KindRequest, wire.KindResponse, wire.KindMalformed, wire.KindClose}, kinds(recs),
		"the open record was lost to the sink's panic; the events after it go unread")
	bad := only(recs, kind(wire.KindMalformed, 0))
	require.Len(t, bad, 1)
	assert.Equal(t, "observer failed, the rest is not read: sink broke", bad[0].Problem)
	assert.Equal(t, wire.EndFIN, only(recs, kind(wire.KindClose, 0))[0].End)
}

// slowSink keeps every record, taking pause over each event: a loaded
// machine's parsing.
type slowSink struct {
	*collect
	pause time.Duration
}

func (s slowSink) Observe(r *wire.Record) {
	if r.Kind == wire.KindEvent {
		time.Sleep(s.pause)
	}
	s.collect.Observe(r)
}

// TestRecordsNoLaterThanTheirReader: what the tap records of a chunk
// carries the instant it read the chunk, before it passed it on, so the
// peer that reads the bytes cannot have read them "before" the tap saw
// them, however slow the recording. Three events in one write, 40 ms of
// recording each: every event's t_us is at or before the client's receipt
// of the last one, on the same clock.
func TestRecordsNoLaterThanTheirReader(t *testing.T) {
	events := progressEvent("1", 1) + progressEvent("2", 2) + progressEvent("3", 3)
	upstream := serveTCP(t, func(c *net.TCPConn) {
		_, _ = io.ReadAll(io.LimitReader(c, int64(len(post("{}")))))
		_, _ = c.Write([]byte(sseHead + chunked(events)))
	})
	clock := runclock.Start()
	sink := slowSink{collect: newCollect(t), pause: 40 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tap, err := observer.Start(context.Background(), ln, observer.Config{Upstream: upstream, Relay: relay, Clock: clock, Sink: atEdge(wire.EdgeClient, sink)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tap.Close()) })

	c := dial(t, tap.Addr())
	_, err = c.Write([]byte(post("{}")))
	require.NoError(t, err)
	var got []byte
	buf := make([]byte, 4096)
	for bytes.Count(got, []byte("\n\n")) < 3 {
		n, err := c.Read(buf)
		require.NoError(t, err)
		got = append(got, buf[:n]...)
	}
	received := clock.Micros()

	recs := sink.awaitN(t, "the three events", func(r wire.Record) bool { return r.Kind == wire.KindEvent }, 3)
	for _, r := range only(recs, func(r wire.Record) bool { return r.Kind == wire.KindEvent }) {
		assert.LessOrEqual(t, r.TUS, received, "event %s recorded at %d µs, after the client had it at %d µs", r.EventID, r.TUS, received)
	}
}

// gateSink keeps every record and holds the first event's record until
// open is closed: a sink (a trigger, the disk) that has fallen behind.
type gateSink struct {
	*collect
	held chan struct{} // closed when the first event's record is held
	open chan struct{}
	once sync.Once
}

func (s *gateSink) Observe(r *wire.Record) {
	if r.Kind == wire.KindEvent {
		s.once.Do(func() { close(s.held) })
		<-s.open
	}
	s.collect.Observe(r)
}

// TestRecordingDoesNotHoldTheRelaysWrites: what the relay writes to the
// client is recorded beside its path, so a sink held on the first event
// lets the next events reach the client (they are written one by one, the
// second only once the first was recorded as held), and every event is
// recorded once the sink lets go, in order and stamped before the client
// read it.
func TestRecordingDoesNotHoldTheRelaysWrites(t *testing.T) {
	sink := &gateSink{collect: newCollect(t), held: make(chan struct{}), open: make(chan struct{})}
	upstream := serveTCP(t, func(c *net.TCPConn) {
		_, _ = io.ReadAll(io.LimitReader(c, int64(len(post("{}")))))
		_, err := io.WriteString(c, sseHead+strings.TrimSuffix(chunked(progressEvent("1", 1)), "0\r\n\r\n"))
		assert.NoError(t, err)
		select {
		case <-sink.held:
		case <-time.After(waitFor):
			t.Error("the first event was never recorded")
			return
		}
		for i := 2; i <= 4; i++ {
			_, err = io.WriteString(c, strings.TrimSuffix(chunked(progressEvent(fmt.Sprint(i), i)), "0\r\n\r\n"))
			assert.NoError(t, err)
		}
	})
	clock := runclock.Start()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tap, err := observer.Start(context.Background(), ln, observer.Config{Upstream: upstream, Relay: relay, Clock: clock, Sink: atEdge(wire.EdgeClient, sink)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tap.Close()) })
	t.Cleanup(func() {
		select {
		case <-sink.open:
		default:
			close(sink.open)
		}
	})

	c := dial(t, tap.Addr())
	require.NoError(t, c.SetReadDeadline(time.Now().Add(waitFor)))
	_, err = c.Write([]byte(post("{}")))
	require.NoError(t, err)
	var got []byte
	buf := make([]byte, 4096)
	for bytes.Count(got, []byte("\n\n")) < 4 {
		n, err := c.Read(buf)
		require.NoError(t, err, "the events after the held one never reached the client: recording held the relay")
		got = append(got, buf[:n]...)
	}
	received := clock.Micros()
	assert.Empty(t, only(sink.all(), kind(wire.KindEvent, 0)), "the sink still holds the first event")
	close(sink.open)

	recs := sink.awaitN(t, "the four events", kind(wire.KindEvent, 0), 4)
	var ids []string
	for _, r := range only(recs, kind(wire.KindEvent, 0)) {
		ids = append(ids, r.EventID)
		assert.LessOrEqual(t, r.TUS, received, "event %s recorded at %d µs, after the client had it at %d µs", r.EventID, r.TUS, received)
	}
	assert.Equal(t, []string{"1", "2", "3", "4"}, ids)
}

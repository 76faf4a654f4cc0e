package observer_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// waitFor bounds every wait of a test on something the tap or a peer does.
const waitFor = 10 * time.Second

// collect is a sink that keeps every record and lets a test wait for one.
type collect struct {
	mu      sync.Mutex
	recs    []wire.Record
	changed chan struct{}
	// after, if set, fails the test on any record observed once it is.
	after bool
	t     testing.TB
}

func newCollect(t testing.TB) *collect { return &collect{changed: make(chan struct{}), t: t} }

func (c *collect) Observe(r *wire.Record) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.after {
		c.t.Errorf("record after Close returned: %+v", *r)
	}
	c.recs = append(c.recs, *observer.Clone(r))
	close(c.changed)
	c.changed = make(chan struct{})
}

// closed marks the tap closed: later records fail the test.
func (c *collect) closed() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.after = true
}

func (c *collect) all() []wire.Record {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.recs)
}

// await returns the records once match holds for one of them, failing the
// test after waitFor.
func (c *collect) await(t testing.TB, what string, match func(wire.Record) bool) []wire.Record {
	t.Helper()
	return c.awaitN(t, what, match, 1)
}

// awaitN returns the records once match holds for n of them.
func (c *collect) awaitN(t testing.TB, what string, match func(wire.Record) bool, n int) []wire.Record {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		c.mu.Lock()
		recs, changed := slices.Clone(c.recs), c.changed
		c.mu.Unlock()
		if len(only(recs, match)) >= n {
			return recs
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no %s recorded in %s; records: %+v", what, waitFor, recs)
		}
	}
}

// kind matches records of one kind (and, if conn > 0, one connection).
func kind(k wire.Kind, conn int64) func(wire.Record) bool {
	return func(r wire.Record) bool { return r.Kind == k && (conn == 0 || r.Conn == conn) }
}

func only(recs []wire.Record, match func(wire.Record) bool) []wire.Record {
	var out []wire.Record
	for _, r := range recs {
		if match(r) {
			out = append(out, r)
		}
	}
	return out
}

// startTap runs a tap in front of upstream, relaying with relay, and
// hands the sink the records of one edge.
func startTap(t testing.TB, edge wire.Edge, upstream string, sink observer.Sink) *observer.Tap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tap, err := observer.Start(context.Background(), ln, observer.Config{
		Upstream: upstream, Relay: relay, Clock: runclock.Start(), Sink: atEdge(edge, sink),
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tap.Close()) })
	return tap
}

// atEdge passes the records of one edge to sink.
func atEdge(edge wire.Edge, sink observer.Sink) observer.Sink {
	return observer.SinkFunc(func(r *wire.Record) {
		if r.Edge == edge {
			sink.Observe(r)
		}
	})
}

// relay is a plain relay, for the tests: it copies each direction as it
// comes and passes on how it ended, a FIN as a half-close and anything
// else as a reset of both sockets.
func relay(c *observer.Conn) {
	go pass(c, c.Server(), c.Client())
	go pass(c, c.Client(), c.Server())
}

func pass(c *observer.Conn, dst, src *observer.Socket) {
	_, err := io.Copy(dst, src)
	switch {
	case err == nil:
		_ = dst.CloseWrite()
	case errors.Is(err, net.ErrClosed):
		_ = dst.Close()
	default:
		c.Reset()
	}
}

// serveTCP runs handle for every connection to a loopback listener and
// returns its address. Cleanup closes the listener and every connection
// and waits for the handlers.
func serveTCP(t testing.TB, handle func(*net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c.(*net.TCPConn))
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	require.NoError(t, c.SetDeadline(time.Now().Add(waitFor)))
	return c.(*net.TCPConn)
}

// A writer writes b to w as one peer of a test does.
type writer func(w io.Writer, b []byte) error

// whole writes b at once.
func whole(w io.Writer, b []byte) error {
	_, err := w.Write(b)
	return err
}

// passBoth relays up (client to server) and down (server to client)
// through a tap at edge, each written as its writer does and ended with a
// FIN, checks that both arrive unchanged, and returns the records once the
// connection's close is recorded.
func passBoth(t *testing.T, edge wire.Edge, up, down string, writeUp, writeDown writer) []wire.Record {
	t.Helper()
	got := make(chan []byte, 1)
	upstream := serveTCP(t, func(c *net.TCPConn) { got <- writeAndRead(t, c, down, writeDown) })
	sink := newCollect(t)
	tap := startTap(t, edge, upstream, sink)
	c := dial(t, tap.Addr())
	assert.True(t, bytes.Equal([]byte(down), writeAndRead(t, c, up, writeUp)), "server to client bytes differ")
	assert.True(t, bytes.Equal([]byte(up), <-got), "client to server bytes differ")
	return sink.await(t, "close", kind(wire.KindClose, 0))
}

// writeAndRead writes out to c, then a FIN, while it reads c to its end,
// and returns what it read.
func writeAndRead(t *testing.T, c *net.TCPConn, out string, write writer) []byte {
	var wg sync.WaitGroup
	wg.Go(func() {
		assert.NoError(t, write(c, []byte(out)))
		assert.NoError(t, c.CloseWrite())
	})
	b, err := io.ReadAll(c)
	assert.NoError(t, err)
	wg.Wait()
	return b
}

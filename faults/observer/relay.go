package observer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"syscall"

	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// chunkBytes is the read buffer of each direction of a connection.
const chunkBytes = 32 << 10

// chunkPool keeps the read buffers of connections that ended for the next
// ones: at thousands of sessions a tap opens several connections for each
// (a client that keeps no connection opens one per request), and allocating and zeroing a fresh
// buffer for every direction of every one was a tenth of the proxy agent's
// CPU time while the sessions started.
var chunkPool = sync.Pool{New: func() any { b := make([]byte, chunkBytes); return &b }}

// conn is one relayed connection: the accepted side (toward the client)
// and the dialled side (toward the server).
type conn struct {
	tap    *Tap
	n      int64
	client net.Conn
	pair   pairing

	mu      sync.Mutex
	server  net.Conn
	aborted bool // the tap closed the connection
	end     wire.End
	by      wire.Side
	detail  string
	then    string // how the other direction ended, when not by a FIN

	// up and down are the bytes passed each way, each written only by
	// its direction's goroutine and read once both are done.
	up, down int64
}

func newConn(t *Tap, nc net.Conn) *conn {
	return &conn{tap: t, n: t.cfg.Share.Nth(t.seq.Add(1)), client: nc}
}

// record stamps r with the time now and hands it to the sink.
func (c *conn) record(r *wire.Record) { c.recordAt(r, c.tap.cfg.Clock.Micros()) }

// recordAt stamps r with tus and hands it to the sink.
func (c *conn) recordAt(r *wire.Record, tus int64) {
	r.TUS, r.Edge, r.Conn = tus, c.tap.cfg.Edge, c.n
	c.tap.cfg.Sink.Observe(r)
}

// stamped is the recorder of one direction's parser: what the parser
// records while it reads a chunk carries the instant the chunk was read,
// before the tap passed it on, so no record of bytes can be later than
// their reader's receipt of them (a client's history records an answer it
// read after the tap did, however long the parsing took on a loaded
// machine). What it records between chunks (at the end of the stream)
// carries the time it is recorded.
type stamped struct {
	c  *conn
	at int64 // t_us of the chunk being fed; 0 between chunks
}

func (s *stamped) record(r *wire.Record) {
	if s.at == 0 {
		s.c.record(r)
		return
	}
	s.c.recordAt(r, s.at)
}

func (c *conn) run() {
	defer c.tap.untrack(c)
	c.recordSafely(&wire.Record{Kind: wire.KindOpen, Peer: c.client.RemoteAddr().String()})
	d := net.Dialer{Timeout: dialTimeout}
	server, err := d.DialContext(c.tap.life, "tcp", c.tap.cfg.Upstream)
	if err == nil && !c.attach(server) {
		server.Close()
		err = net.ErrClosed
	}
	if err != nil {
		c.tap.log.Debug("dial failed", "upstream", c.tap.cfg.Upstream, "err", err)
		c.ended(wire.SideServer, err, "dial: ")
		reset(c.client)
		c.closeRecord()
		return
	}
	var wg sync.WaitGroup
	upStamp, downStamp := &stamped{c: c}, &stamped{c: c}
	requests := &guarded{c: c, p: newRequestParser(upStamp, &c.pair), pair: &c.pair}
	responses := &guarded{c: c, p: newResponseParser(downStamp, &c.pair)}
	wg.Go(func() { c.pump(c.client, server, wire.SideClient, requests, upStamp, &c.up) })
	wg.Go(func() { c.pump(server, c.client, wire.SideServer, responses, downStamp, &c.down) })
	wg.Wait()
	c.client.Close()
	server.Close()
	c.closeRecord()
}

// attach sets the dialled side, unless the tap closed the connection
// meanwhile.
func (c *conn) attach(server net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.server = server
	return !c.aborted
}

// abort ends the connection for the tap's Close.
func (c *conn) abort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.aborted = true
	c.client.Close()
	if c.server != nil {
		c.server.Close()
	}
}

// parser reads one direction.
type parser interface {
	feed(b []byte)
	end()
}

// guarded runs the parser of one direction so that a panic in it, or in
// the sink it calls, ends the recording of that direction and not the
// relay (nor the run): a malformed record says so, the log has the stack,
// and the bytes keep passing unread. The fuzzers look for such panics;
// this is the net under them.
type guarded struct {
	c      *conn
	p      parser
	pair   *pairing // the request direction's, told that it stopped; nil for responses
	broken bool
}

func (g *guarded) feed(b []byte) {
	if g.broken {
		return
	}
	defer g.catch()
	g.p.feed(b)
}

func (g *guarded) end() {
	if g.broken {
		return
	}
	defer g.catch()
	g.p.end()
}

func (g *guarded) catch() {
	v := recover()
	if v == nil {
		return
	}
	g.broken = true
	if g.pair != nil {
		g.pair.stop()
	}
	g.c.tap.log.Error("observer: panic while recording; this direction of the connection is no longer read",
		"conn", g.c.n, "panic", v, "stack", string(debug.Stack()))
	defer func() { _ = recover() }() // a sink that panics again is only logged
	g.c.record(&wire.Record{Kind: wire.KindMalformed, Problem: fmt.Sprintf("observer failed, the rest is not read: %v", v)})
}

// pump relays one direction: each chunk read from src is written to dst at
// once and then parsed. It returns when src ends or dst fails, having
// mirrored that end to the other side.
func (c *conn) pump(src, dst net.Conn, from wire.Side, p parser, stamp *stamped, count *int64) {
	bp := chunkPool.Get().(*[]byte)
	defer chunkPool.Put(bp) // after p.end: a parser keeps no byte of a chunk past its feed
	defer p.end()
	buf := *bp
	up := from == wire.SideClient
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if up {
				c.pair.begin()
			}
			stamp.at = max(c.tap.cfg.Clock.Micros(), 1) // read now, before the peer can have it
			w, werr := dst.Write(buf[:n])
			*count += int64(w)
			p.feed(buf[:w])
			stamp.at = 0
			if up {
				c.pair.done()
			}
			if werr != nil {
				c.ended(other(from), werr, "")
				reset(src)
				dst.Close()
				return
			}
		}
		if err == nil {
			continue
		}
		if c.ended(from, err, "") == wire.EndFIN {
			closeWrite(dst)
		} else {
			reset(dst)
			src.Close()
		}
		return
	}
}

// ended notes that side ended its part of the connection with err, and
// returns how. The first end is the connection's; a later one that is not
// a FIN goes into the detail.
func (c *conn) ended(side wire.Side, err error, prefix string) wire.End {
	end := classify(err)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.aborted:
		end, side = wire.EndObserver, ""
	case errors.Is(err, net.ErrClosed):
		return wire.EndRST // closed here as the mirror of the other direction's end
	}
	switch {
	case c.end == "":
		c.end, c.by = end, side
		if end == wire.EndError || end == wire.EndTimeout || prefix != "" {
			c.detail = prefix + err.Error()
		}
	case end == wire.EndObserver && c.then == "":
		c.then = "then closed by the observer"
	case end != wire.EndFIN && c.then == "":
		c.then = "then " + string(end) + " by " + string(side)
	}
	return end
}

func (c *conn) closeRecord() {
	c.mu.Lock()
	r := &wire.Record{Kind: wire.KindClose, End: c.end, By: c.by, BytesUp: c.up, BytesDown: c.down,
		Detail: joinDetail(c.detail, c.then)}
	c.mu.Unlock()
	c.recordSafely(r)
}

// recordSafely records a connection's open or close, keeping a sink that
// panics from ending the relay (see guarded).
func (c *conn) recordSafely(r *wire.Record) {
	defer func() {
		if v := recover(); v != nil {
			c.tap.log.Error("observer: the sink panicked", "conn", c.n, "kind", r.Kind, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	c.record(r)
}

func joinDetail(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// classify names how a read, write or dial error ended a connection.
func classify(err error) wire.End {
	switch {
	case errors.Is(err, io.EOF):
		return wire.EndFIN
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNREFUSED):
		return wire.EndRST
	case errors.Is(err, syscall.ETIMEDOUT), errors.Is(err, os.ErrDeadlineExceeded):
		return wire.EndTimeout
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return wire.EndTimeout
	}
	return wire.EndError
}

func other(s wire.Side) wire.Side {
	if s == wire.SideClient {
		return wire.SideServer
	}
	return wire.SideClient
}

// closeWrite passes a FIN on: the other direction keeps flowing.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	c.Close()
}

// reset closes c with an RST (SO_LINGER 0), as a peer's reset or a refused
// connect looks.
func reset(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
	c.Close()
}

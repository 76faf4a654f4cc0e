package observer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chaosrun/chaosrun/wire"
)

// Conn is one connection through the fault proxy: the client's socket,
// which the tap accepted (the client edge), and the server's, which it
// dialled (the server edge). Both edges record it under one number. The
// tap hands a dialled connection to its [Relay], which carries its bytes
// from one socket to the other and closes each once it is done with it;
// the fault proxy may end it sooner ([Conn.Reset], [Conn.Close]).
type Conn struct {
	tap    *Tap
	n      int64
	opened time.Time
	peer   string // the client's address
	client *Socket

	aborted atomic.Bool // the tap closed the connection: every end is its

	mu     sync.Mutex
	server *Socket // set once dialled
	cut    bool    // Reset or Close came before the dial ended
	linger bool    // closes are RSTs (ResetOnClose)
	left   int     // sockets whose close is not recorded yet
	done   chan struct{}
}

func newConn(t *Tap, nc net.Conn) *Conn {
	c := &Conn{tap: t, n: t.cfg.Share.Nth(t.seq.Add(1)), opened: time.Now(), peer: nc.RemoteAddr().String(),
		left: 1, done: make(chan struct{})}
	c.client = newSocket(c, wire.EdgeClient, nc)
	return c
}

// N is the connection's number on both edges.
func (c *Conn) N() int64 { return c.n }

// Name names the connection for logs: the client's address and its
// number.
func (c *Conn) Name() string { return fmt.Sprintf("%s#%d", c.peer, c.n) }

// Opened is when the tap accepted the connection.
func (c *Conn) Opened() time.Time { return c.opened }

// Client is the client's socket (the client edge): reading it gives what
// the client sent, writing to it delivers to the client.
func (c *Conn) Client() *Socket { return c.client }

// Server is the server's socket (the server edge): reading it gives what
// the server sent, writing to it delivers to the server. It is nil until
// the dial succeeded; a relay is only given dialled connections.
func (c *Conn) Server() *Socket {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.server
}

// Done is closed once the close of each of the connection's sockets has
// been recorded.
func (c *Conn) Done() <-chan struct{} { return c.done }

// ResetOnClose gives both sockets SO_LINGER 0, so that every later close
// of them, by the relay, the fault proxy or a peer's end mirrored, is an
// RST, and is recorded as one. A proxy that makes closes RSTs (Toxiproxy's
// reset_peer) calls it before relaying.
func (c *Conn) ResetOnClose() {
	c.mu.Lock()
	c.linger = true
	s := c.server
	c.mu.Unlock()
	c.client.lingerZero()
	if s != nil {
		s.lingerZero()
	}
}

// Reset resets both sockets now (an RST each way, whatever their linger):
// bytes the proxy holds for them, and bytes they hold unsent, are lost, as
// with any reset. It reports whether the connection was still open.
func (c *Conn) Reset() bool { return c.shut(wire.EndRST, true) }

// Close closes both sockets now, each with a FIN, or an RST after
// ResetOnClose, as a disabled proxy closes its connections. It reports
// whether the connection was still open.
func (c *Conn) Close() bool { return c.shut(wire.EndFIN, false) }

// abort closes the connection for the tap's Close.
func (c *Conn) abort() {
	c.aborted.Store(true)
	c.shut(wire.EndObserver, false)
}

func (c *Conn) shut(end wire.End, rst bool) bool {
	c.mu.Lock()
	s := c.server
	if s == nil {
		c.cut = true
	}
	c.mu.Unlock()
	open := c.client.shut(end, rst)
	if s != nil {
		open = s.shut(end, rst) || open
	}
	return open
}

// attach sets the dialled socket, unless the connection was closed while
// it was dialled.
func (c *Conn) attach(nc net.Conn) (*Socket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.aborted.Load() || c.cut {
		return nil, false
	}
	c.server = newSocket(c, wire.EdgeServer, nc)
	c.left++
	return c.server, true
}

// socketDone counts a socket's close record; the last one ends the
// connection.
func (c *Conn) socketDone() {
	c.mu.Lock()
	c.left--
	last := c.left == 0
	c.mu.Unlock()
	if last {
		c.tap.untrack(c)
		close(c.done)
	}
}

// run records the connection's opening, dials the server and hands the
// connection to the relay, or, when the dial fails, resets the client.
func (c *Conn) run() {
	c.client.recordSafely(&wire.Record{Kind: wire.KindOpen, Peer: c.peer})
	d := net.Dialer{Timeout: dialTimeout}
	nc, err := d.DialContext(c.tap.life, "tcp", c.tap.cfg.Upstream)
	var server *Socket
	if err == nil {
		var ok bool
		if server, ok = c.attach(nc); !ok {
			nc.Close()
			err = net.ErrClosed
		}
	}
	if err != nil {
		c.tap.log.Debug("dial failed", "upstream", c.tap.cfg.Upstream, "err", err)
		c.client.refused(err)
		return
	}
	c.mu.Lock()
	linger := c.linger
	c.mu.Unlock()
	if linger {
		server.lingerZero()
	}
	server.recordSafely(&wire.Record{Kind: wire.KindOpen, Peer: nc.LocalAddr().String()})
	c.tap.wg.Go(c.client.read)
	c.tap.wg.Go(server.read)
	c.tap.cfg.Relay(c)
}

// Socket is one observed socket of a [Conn]: the client's at the client
// edge, the server's at the server edge. A goroutine of the tap reads it
// as soon as its peer's bytes arrive, records them (at the client edge
// they are the requests, at the server edge the responses) and queues
// them for the relay, which takes them with Read or WriteTo; so what the
// peer sent is recorded when it arrived, whatever holds the relay up (a
// stalled fault toxic). What the relay writes is recorded stamped with
// the instant it was written, parsed beside the relay's path. Read (or WriteTo) is for one goroutine, Write for one other;
// Close may come from any.
//
// A write to a socket that is gone (its peer reset it, or it was closed
// here) passes nothing and reports success, so that a relay keeps draining
// what it holds for it instead of blocking (Toxiproxy's toxics otherwise
// stay blocked on a chunk nobody reads, and removing them hangs its API:
// Shopify/toxiproxy#558). The peer learns of the end from its socket.
type Socket struct {
	c    *Conn
	edge wire.Edge
	nc   net.Conn
	// peer is the side of the edge the socket leads to, local the proxy's.
	peer, local wire.Side
	// in reads what the peer sends, out what is written to it; requests
	// says in is the request direction (the client edge).
	in, out     *guarded
	inAt, outAt *stamped
	requests    bool
	pair        pairing
	box         inbox
	ob          outbox // what the relay wrote, for out to parse
	rest        *chunk // what Read has not returned yet of a chunk
	restAt      int

	wmu  sync.Mutex // serialises writes and the end of out
	wend bool       // writes no longer reach the socket

	mu      sync.Mutex
	linger  bool // SO_LINGER 0: a close here is an RST
	closing bool // closed here
	end     wire.End
	by      wire.Side
	detail  string
	then    string // how the other direction ended, when not by a FIN
	pending int    // of the reader and the writer, those not done
	// nIn and nOut count the bytes read from the peer (by the reader) and
	// written to it (under wmu); the close record reads them once both are
	// done.
	nIn, nOut int64
}

func newSocket(c *Conn, edge wire.Edge, nc net.Conn) *Socket {
	s := &Socket{c: c, edge: edge, nc: nc, requests: edge == wire.EdgeClient, pending: 2}
	s.peer, s.local = wire.SideClient, wire.SideServer
	if !s.requests {
		s.peer, s.local = wire.SideServer, wire.SideClient
	}
	s.inAt, s.outAt = &stamped{s: s}, &stamped{s: s}
	if s.requests {
		s.in = &guarded{s: s, p: newRequestParser(s.inAt, &s.pair), pair: &s.pair}
		s.out = &guarded{s: s, p: newResponseParser(s.outAt, &s.pair)}
	} else {
		s.in = &guarded{s: s, p: newResponseParser(s.inAt, &s.pair)}
		s.out = &guarded{s: s, p: newRequestParser(s.outAt, &s.pair), pair: &s.pair}
	}
	s.box.init()
	s.ob.init()
	return s
}

// record stamps r with the time now and hands it to the sink.
func (s *Socket) record(r *wire.Record) { s.recordAt(r, s.c.tap.cfg.Clock.Micros()) }

// recordAt stamps r with tus and hands it to the sink.
func (s *Socket) recordAt(r *wire.Record, tus int64) {
	r.TUS, r.Edge, r.Conn = tus, s.edge, s.c.n
	s.c.tap.cfg.Sink.Observe(r)
}

// stamped is the recorder of one direction's parser: what the parser
// records while it reads a chunk carries the instant the chunk was read
// from the peer, or, for one written to it, the instant before it was
// written, so no record of bytes can be later than their reader's receipt
// of them, however long the parsing takes on a loaded machine. What it
// records between chunks (at the end of the stream) carries the time it
// is recorded.
type stamped struct {
	s  *Socket
	at int64 // t_us of the chunk being fed; 0 between chunks
}

func (st *stamped) record(r *wire.Record) {
	if st.at == 0 {
		st.s.record(r)
		return
	}
	st.s.recordAt(r, st.at)
}

// read is the socket's reader: it reads what the peer sends as it
// arrives, queues it for the relay, then records it. It stops reading
// while the relay has more than maxQueued bytes of it to take, so a peer
// that outruns a stalled fault is held back by TCP, as by the proxy
// itself.
func (s *Socket) read() {
	bp := readPool.Get().(*[]byte)
	defer readPool.Put(bp) // after the parser's end: it keeps no byte of a chunk past its feed
	buf := *bp
	clock := &s.c.tap.cfg.Clock
	for {
		n, err := s.nc.Read(buf)
		if n > 0 {
			at := max(clock.Micros(), 1) // read now, before the relay can pass it on
			if s.requests {
				s.pair.begin()
			}
			s.nIn += int64(n)
			full := s.box.put(buf[:n])
			s.inAt.at = at
			s.in.feed(buf[:n])
			s.inAt.at = 0
			if s.requests {
				s.pair.done()
			}
			if full {
				s.box.waitRoom()
			}
		}
		if err != nil {
			s.readEnded(err)
			return
		}
	}
}

// readEnded notes how the peer ended its sending (unless the socket was
// closed here), ends what the relay reads with it, and, when the peer
// reset the connection, closes the socket: nothing can reach it any more.
func (s *Socket) readEnded(err error) {
	end := wire.EndFIN
	if !errors.Is(err, net.ErrClosed) {
		end = s.ended(s.peer, err, "")
	}
	s.box.finish(err)
	if end != wire.EndFIN {
		s.gone()
	}
	s.in.end()
	s.sideDone()
}

// Read returns what the peer sent, in order, as the reader queued it. At
// the peer's end it returns io.EOF for a FIN and the error for anything
// else (syscall.ECONNRESET for a reset); once the socket was closed here,
// net.ErrClosed, what was queued being dropped as a closed socket drops
// what it had received.
func (s *Socket) Read(p []byte) (int, error) {
	if s.rest == nil {
		ck, err := s.box.take()
		if err != nil {
			return 0, err
		}
		s.rest, s.restAt = ck, 0
	}
	n := copy(p, s.rest.b[s.restAt:])
	s.restAt += n
	if s.restAt == len(s.rest.b) {
		freeChunk(s.rest)
		s.rest = nil
	}
	return n, nil
}

// WriteTo writes what the peer sent to w, chunk by chunk as the reader
// queued it, until the peer's end (nil for a FIN, its error otherwise) or
// a write to w fails. io.Copy uses it, so a relay copying from the socket
// makes no buffer of its own.
func (s *Socket) WriteTo(w io.Writer) (int64, error) {
	var total int64
	for {
		var b []byte
		var ck *chunk
		if s.rest != nil {
			ck, b, s.rest = s.rest, s.rest.b[s.restAt:], nil
		} else {
			var err error
			if ck, err = s.box.take(); err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				return total, err
			}
			b = ck.b
		}
		n, err := w.Write(b)
		total += int64(n)
		freeChunk(ck)
		if err != nil {
			return total, err
		}
	}
}

// Write writes b to the peer and queues a copy for the parser of that
// direction (outbox), which records it stamped with the instant before the
// write. It always reports success: once the socket is gone, bytes are
// dropped (see [Socket]).
func (s *Socket) Write(b []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.wend {
		return len(b), nil
	}
	if !s.requests {
		s.pair.begin()
	}
	at := max(s.c.tap.cfg.Clock.Micros(), 1) // before the peer can have it
	n, err := s.nc.Write(b)
	s.nOut += int64(n)
	if n > 0 {
		start, full := s.ob.put(b[:n], at)
		if start {
			go s.drain()
		}
		if full {
			s.ob.waitRoom()
		}
	} else if !s.requests {
		s.pair.done()
	}
	if err != nil {
		if !errors.Is(err, net.ErrClosed) {
			s.ended(s.peer, err, "")
		}
		s.markClosed()
		s.nc.Close()
		s.endWritesLocked()
	}
	return len(b), nil
}

// gone closes a socket its peer reset: nothing reaches it any more, and
// a later Close or Reset here has nothing to end.
func (s *Socket) gone() {
	s.markClosed()
	s.nc.Close()
	s.writerDone()
}

func (s *Socket) markClosed() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}

// CloseWrite sends a FIN to the peer and writes nothing more, while what
// the peer sends is still read: a relay that passes a half-close on.
func (s *Socket) CloseWrite() error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.wend {
		return nil
	}
	if cw, ok := s.nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	s.mu.Lock()
	s.endLocked(s.local, wire.EndFIN, "")
	s.mu.Unlock()
	s.endWritesLocked()
	return nil
}

// Close closes the socket here: a FIN, or an RST once the connection's
// closes are resets (Conn.ResetOnClose). A relay closes each socket once
// it has nothing more to write to it. It is idempotent and returns nil.
func (s *Socket) Close() error {
	s.shut(wire.EndFIN, false)
	return nil
}

// shut closes the socket here, with end (FIN or RST by the proxy's side,
// or observer), and an RST when rst or the linger says so. It reports
// whether it was still open.
func (s *Socket) shut(end wire.End, rst bool) bool {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return false
	}
	s.closing = true
	rst = rst || s.linger
	if end == wire.EndFIN && rst {
		end = wire.EndRST
	}
	open := s.end == ""
	s.endLocked(s.local, end, "")
	s.mu.Unlock()
	s.closeNow(rst)
	return open
}

// closeNow closes the socket, with an RST when rst, drops what the relay
// has not taken, and ends the writing side.
func (s *Socket) closeNow(rst bool) {
	if rst {
		setLinger0(s.nc)
	}
	s.nc.Close()
	s.box.shut()
	s.writerDone()
}

func (s *Socket) lingerZero() {
	s.mu.Lock()
	s.linger = true
	s.mu.Unlock()
	setLinger0(s.nc)
}

// writerDone ends the writing side: later writes are dropped.
func (s *Socket) writerDone() {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.endWritesLocked()
}

func (s *Socket) endWritesLocked() {
	if s.wend {
		return
	}
	s.wend = true
	if s.ob.finish() {
		s.out.end()
		s.sideDone()
	}
}

// drain parses what the relay wrote, chunk by chunk in the order written,
// until the outbox is empty; after the last chunk of ended writes it ends
// the parser and counts the writer done.
func (s *Socket) drain() {
	for {
		ck, end := s.ob.next()
		if ck == nil {
			if end {
				s.out.end()
				s.sideDone()
			}
			return
		}
		s.outAt.at = ck.at
		s.out.feed(ck.b)
		s.outAt.at = 0
		freeChunk(ck)
		if !s.requests {
			s.pair.done()
		}
	}
}

// refused ends a client socket whose server could not be dialled: it is
// reset, the nearest a proxy comes to a refused connect.
func (s *Socket) refused(err error) {
	s.mu.Lock()
	closed := s.closing // by the tap's Close, or by Reset or Close while dialling
	s.closing = true
	s.mu.Unlock()
	if !closed {
		s.ended(wire.SideServer, err, "dial: ")
		s.closeNow(true)
	}
	s.in.end()
	s.sideDone() // the reader never ran
}

// ended notes that side ended its part of the socket with err, and
// returns how.
func (s *Socket) ended(side wire.Side, err error, prefix string) wire.End {
	end := classify(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	detail := ""
	if end == wire.EndError || end == wire.EndTimeout || prefix != "" {
		detail = prefix + err.Error()
	}
	s.endLocked(side, end, detail)
	return end
}

// endLocked notes an end: the first is the socket's, a later one that is
// not a FIN goes into the detail. Once the tap is closing the connection,
// every end is the tap's (observer), whichever side noticed it first.
// s.mu must be held.
func (s *Socket) endLocked(side wire.Side, end wire.End, detail string) {
	if s.c.aborted.Load() {
		end, side, detail = wire.EndObserver, "", ""
	}
	switch {
	case s.end == "":
		s.end, s.detail = end, detail
		if end != wire.EndObserver {
			s.by = side
		}
	case end == wire.EndObserver && s.then == "":
		s.then = "then closed by the observer"
	case end != wire.EndFIN && end != wire.EndObserver && s.then == "":
		s.then = "then " + string(end) + " by " + string(side)
	}
}

// sideDone counts the end of the reader or the writer; the last records
// the socket's close.
func (s *Socket) sideDone() {
	s.mu.Lock()
	s.pending--
	last := s.pending == 0
	s.mu.Unlock()
	if !last {
		return
	}
	s.nc.Close() // both directions are over: a half-closed socket is released too
	s.closeRecord()
	s.c.socketDone()
}

func (s *Socket) closeRecord() {
	s.mu.Lock()
	r := &wire.Record{Kind: wire.KindClose, End: s.end, By: s.by, BytesUp: s.nIn, BytesDown: s.nOut,
		Detail: joinDetail(s.detail, s.then)}
	s.mu.Unlock()
	if !s.requests {
		r.BytesUp, r.BytesDown = r.BytesDown, r.BytesUp
	}
	s.recordSafely(r)
}

// recordSafely records a socket's open or close, keeping a sink that
// panics from ending the connection (see guarded).
func (s *Socket) recordSafely(r *wire.Record) {
	defer func() {
		if v := recover(); v != nil {
			s.c.tap.log.Error("observer: the sink panicked", "conn", s.c.n, "edge", s.edge, "kind", r.Kind, "panic", v, "stack", string(debug.Stack()))
		}
	}()
	s.record(r)
}

// parser reads one direction.
type parser interface {
	feed(b []byte)
	end()
}

// guarded runs the parser of one direction so that a panic in it, or in
// the sink it calls, ends the recording of that direction and not the
// connection (nor the run): a malformed record says so, the log has the
// stack, and the bytes keep passing unread. The fuzzers look for such
// panics; this is the net under them.
type guarded struct {
	s      *Socket
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
	g.s.c.tap.log.Error("observer: panic while recording; this direction of the connection is no longer read",
		"conn", g.s.c.n, "edge", g.s.edge, "panic", v, "stack", string(debug.Stack()))
	defer func() { _ = recover() }() // a sink that panics again is only logged
	g.s.record(&wire.Record{Kind: wire.KindMalformed, Problem: fmt.Sprintf("observer failed, the rest is not read: %v", v)})
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

// setLinger0 gives c SO_LINGER 0: its close is an RST.
func setLinger0(c net.Conn) {
	if l, ok := c.(interface{ SetLinger(int) error }); ok {
		_ = l.SetLinger(0)
	}
}

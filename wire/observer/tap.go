package observer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
)

// dialTimeout bounds the dial of the upstream for one connection.
const dialTimeout = 10 * time.Second

// closeWarn is how long Close waits before it logs that it is waiting.
const closeWarn = 5 * time.Second

// Config configures a [Tap].
type Config struct {
	// Upstream is the host:port the tap dials for each connection it
	// accepts.
	Upstream string
	// Relay carries the bytes of each connection between its two sockets
	// (the fault proxy's links, in the proxy agent).
	Relay Relay
	// Clock gives every record its t_us; the zero value starts a clock at
	// Start.
	Clock runclock.Clock
	// Sink receives the records; nil drops them (the tap only relays).
	Sink Sink
	// Share numbers the tap's connections when several proxy agents each
	// observe a share of a run's clients (see wire.Share); the zero value
	// numbers them 1, 2, 3...
	Share wire.Share
	// Logger receives debug logs (a failed dial, an accept error); nil
	// discards them.
	Logger *slog.Logger
}

// Relay is handed each connection the tap has accepted and dialled, and
// carries its bytes: what it reads from one socket it writes to the other,
// in order, for as long as it likes (a fault proxy delays, drops or cuts
// them), and it closes each socket once it has nothing more to write to
// it. It must return promptly, leaving the copying to goroutines of its
// own.
type Relay func(c *Conn)

// ErrClosed is returned by the methods of a tap that has been closed.
var ErrClosed = errors.New("observer: tap closed")

// Tap is a running wire observer at both edges of a relay. Create it with
// [Start], stop it with [Tap.Close].
type Tap struct {
	cfg  Config
	addr net.Addr // where the tap listens, and listens again after Refuse
	log  *slog.Logger

	// life ends when the tap closes: it cancels dials in progress.
	life    context.Context
	endLife context.CancelFunc
	detach  func() bool

	seq       atomic.Int64 // connection numbers
	mu        sync.Mutex
	ln        net.Listener // nil while the tap refuses connections
	closing   bool
	live      map[*Conn]struct{}
	wg        sync.WaitGroup // the accept loops and every connection's goroutines
	acceptErr error
	closeOnce sync.Once
}

// Start accepts connections on ln, dials cfg.Upstream for each and hands
// both sockets to cfg.Relay, recording what crosses each, until Close is
// called or ctx ends. The tap owns ln; after [Tap.Refuse] it listens again
// with net.Listen on the network and address of ln.Addr().
func Start(ctx context.Context, ln net.Listener, cfg Config) (*Tap, error) {
	switch {
	case ln == nil:
		return nil, errors.New("observer: no listener")
	case cfg.Upstream == "":
		return nil, errors.New("observer: no upstream")
	case cfg.Relay == nil:
		return nil, errors.New("observer: no relay")
	case !cfg.Share.Valid():
		return nil, fmt.Errorf("observer: share %d of %d", cfg.Share.Index, cfg.Share.Of)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("observer: %w", err)
	}
	if cfg.Clock.Base().IsZero() {
		cfg.Clock = runclock.Start()
	}
	if cfg.Sink == nil {
		cfg.Sink = SinkFunc(func(*wire.Record) {})
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := &Tap{cfg: cfg, addr: ln.Addr(), ln: ln, log: log, live: map[*Conn]struct{}{}}
	t.life, t.endLife = context.WithCancel(context.Background())
	t.wg.Go(func() { t.accept(ln) })
	t.detach = context.AfterFunc(ctx, func() { t.shutdown() })
	return t, nil
}

// Addr is the address the tap listens on (host:port), the one to give to
// whatever connects through it. It stays the same across [Tap.Refuse] and
// [Tap.Accept].
func (t *Tap) Addr() string { return t.addr.String() }

// Refuse closes the tap's listener, so that a new connection to Addr is
// refused (the kernel answers its SYN with a reset) rather than accepted
// and then cut: what the fault catalogue's partition {mode: refuse} needs
// at the client edge, where the client connects to the tap. A refused
// connection never reaches the tap and leaves no
// record (nor does one the kernel had completed but the tap not yet
// accepted: closing the listener resets it).
//
// Connections already open are left as they are: to cut them too (as a
// disabled proxy does), refuse first and then close them ([Tap.Conns],
// [Conn.Close]), so that no connection slips in between.
//
// Refuse is idempotent; [Tap.Accept] listens again. It returns ErrClosed
// once the tap is closed.
func (t *Tap) Refuse() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closing:
		return ErrClosed
	case t.ln == nil:
		return nil
	}
	ln := t.ln
	t.ln = nil
	if err := ln.Close(); err != nil {
		return fmt.Errorf("observer: refuse: %w", err)
	}
	return nil
}

// Accept listens on Addr again after [Tap.Refuse], and accepts and relays
// connections as before (their numbers go on from the last). It does
// nothing while the tap accepts, fails if the address was taken meanwhile,
// and returns ErrClosed once the tap is closed.
func (t *Tap) Accept() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closing:
		return ErrClosed
	case t.ln != nil:
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(t.life, t.addr.Network(), t.addr.String())
	if err != nil {
		return fmt.Errorf("observer: listen again on %s: %w", t.addr, err)
	}
	t.ln = ln
	t.wg.Go(func() { t.accept(ln) })
	return nil
}

// Conns returns the connections open now: accepted, and not yet closed on
// both edges.
func (t *Tap) Conns() []*Conn {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*Conn, 0, len(t.live))
	for c := range t.live {
		out = append(out, c)
	}
	return out
}

// Close stops accepting, ends every open connection (their close records
// say end "observer") and returns once every goroutine of the tap has
// returned, so no record follows it (a relay's later writes to a closed
// socket pass nothing and record nothing). It is idempotent; it returns the error
// that stopped the accept loop, if one other than the tap's own close did.
func (t *Tap) Close() error {
	t.detach()
	t.shutdown()
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.acceptErr
}

func (t *Tap) shutdown() {
	t.closeOnce.Do(func() {
		t.mu.Lock()
		t.closing = true
		live := make([]*Conn, 0, len(t.live))
		for c := range t.live {
			live = append(live, c)
		}
		ln := t.ln
		t.ln = nil
		t.mu.Unlock()
		for _, c := range live {
			c.abort()
		}
		t.endLife()
		if ln != nil {
			_ = ln.Close()
		}
		// Closing the sockets ends every read and write; only a sink that
		// does not return can hold Close up.
		hang := time.AfterFunc(closeWarn, func() {
			t.log.Warn("observer: Close still waits for connections after " + closeWarn.String() + ": is a sink blocked?")
		})
		t.wg.Wait()
		for _, c := range live {
			<-c.done // a relay's goroutine may record the last close
		}
		hang.Stop()
	})
}

// accept runs the accept loop of ln until the tap closes ln (on Refuse or
// Close) or ln fails for good. Other errors (a descriptor limit, say) are
// logged and retried after a pause, as net/http does.
func (t *Tap) accept(ln net.Listener) {
	pause := time.Duration(0)
	for {
		nc, err := ln.Accept()
		if err != nil {
			if !t.listening(ln) {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				t.mu.Lock()
				t.acceptErr = fmt.Errorf("observer: accept: %w", err)
				t.mu.Unlock()
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			t.log.Warn("accept failed; retrying", "err", err, "pause", pause)
			select {
			case <-time.After(pause):
			case <-t.life.Done():
				return
			}
			continue
		}
		pause = 0
		c := newConn(t, nc)
		if !t.track(c) {
			nc.Close()
			continue
		}
		t.wg.Go(c.run)
	}
}

// listening reports whether ln is the tap's listener: not closed by
// Refuse or Close.
func (t *Tap) listening(ln net.Listener) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ln == ln && !t.closing
}

// track registers a connection, unless the tap is closing.
func (t *Tap) track(c *Conn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closing {
		return false
	}
	t.live[c] = struct{}{}
	return true
}

func (t *Tap) untrack(c *Conn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.live, c)
}

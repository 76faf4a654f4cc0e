package observer

import (
	"net/http"
	"sync"
	"time"
)

// pairWait bounds how long the response direction waits for the request
// direction to parse the request a response answers (see [pairing.method]).
const pairWait = 10 * time.Millisecond

// maxPending bounds the HEAD and CONNECT requests a connection remembers
// until their responses arrive.
const maxPending = 64

// pairing joins the two directions of one connection: the request
// direction says which requests it has recorded, the response direction
// asks for the method of the request a response answers (HEAD and CONNECT
// frame their responses differently) and, by asking, records a response
// after its request.
type pairing struct {
	mu      sync.Mutex
	known   int64            // requests recorded
	pending map[int64]string // HEAD and CONNECT requests not yet answered
	busy    int              // chunks of the request direction passed and not parsed yet
	stopped bool             // the request direction stopped parsing
	wake    chan struct{}    // closed when busy ends, if the other side waits
}

// begin marks a chunk of the request direction passed and not yet parsed;
// done marks the oldest such chunk parsed. The direction written by the
// relay parses its chunks after the write, on a goroutine of its own
// (outbox), so several may be passed and not parsed yet.
func (p *pairing) begin() {
	p.mu.Lock()
	p.busy++
	p.mu.Unlock()
}

func (p *pairing) done() {
	p.mu.Lock()
	p.busy--
	if p.wake != nil {
		close(p.wake)
		p.wake = nil
	}
	p.mu.Unlock()
}

// header notes the method of request x, once its header has been parsed.
func (p *pairing) header(x int64, method string) {
	if method != http.MethodHead && method != http.MethodConnect {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		p.pending = map[int64]string{}
	}
	if len(p.pending) < maxPending {
		p.pending[x] = method
	}
}

// recorded notes that request x has been recorded.
func (p *pairing) recorded(x int64) {
	p.mu.Lock()
	p.known = x
	p.mu.Unlock()
}

// stop notes that the request direction stopped parsing.
func (p *pairing) stop() {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
}

// method returns the method of request x, as far as it is known. A
// response can be read before the request direction has parsed the chunk
// that carried its request (the server answers bytes as soon as they were
// passed on), so while that direction holds a chunk not parsed yet and
// request x is not recorded, this waits for it, at most pairWait: the wait
// never holds bytes back for longer, and a request direction blocked on a
// full socket cannot stall this one. A method that is not HEAD or CONNECT
// is returned as "".
func (p *pairing) method(x int64) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var timeout <-chan time.Time
	for p.known < x && p.busy > 0 && !p.stopped {
		if p.wake == nil {
			p.wake = make(chan struct{})
		}
		wake := p.wake
		if timeout == nil {
			t := time.NewTimer(pairWait)
			defer t.Stop()
			timeout = t.C
		}
		p.mu.Unlock()
		select {
		case <-wake:
		case <-timeout:
			p.mu.Lock()
			return p.take(x)
		}
		p.mu.Lock()
	}
	return p.take(x)
}

func (p *pairing) take(x int64) string {
	m := p.pending[x]
	delete(p.pending, x)
	return m
}

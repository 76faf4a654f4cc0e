package observer

import (
	"net"
	"sync"
)

// readBytes is the buffer a socket's reader reads into.
const readBytes = 32 << 10

// maxQueued bounds the bytes a socket's reader has read from its peer and
// the relay has not taken yet: past it the reader stops reading until the
// relay catches up, and the peer is held back by TCP.
const maxQueued = 1 << 20

// readPool keeps the read buffers of sockets that ended for the next ones:
// at thousands of sessions allocating and zeroing a fresh buffer for every
// socket was a tenth of the proxy agent's CPU time while they started.
var readPool = sync.Pool{New: func() any { b := make([]byte, readBytes); return &b }}

// chunkSizes are the capacities of queued chunks: a chunk is copied out of
// the read buffer into the smallest that holds it, so a queue of small SSE
// events costs what they weigh.
var chunkSizes = [...]int{512, 4 << 10, readBytes}

var chunkPools [len(chunkSizes)]sync.Pool

// chunk is bytes read from a peer, queued for the relay.
type chunk struct {
	b     []byte
	class int
	at    int64 // t_us of its write, in an outbox
	next  *chunk
}

func newChunk(b []byte) *chunk {
	class := 0
	for len(b) > chunkSizes[class] {
		class++
	}
	ck, _ := chunkPools[class].Get().(*chunk)
	if ck == nil {
		ck = &chunk{b: make([]byte, 0, chunkSizes[class]), class: class}
	}
	ck.b = append(ck.b[:0], b...)
	return ck
}

func freeChunk(ck *chunk) {
	ck.next, ck.at = nil, 0
	chunkPools[ck.class].Put(ck)
}

// inbox is the queue between a socket's reader and the relay: chunks in
// the order they were read, then the reader's end.
type inbox struct {
	mu         sync.Mutex
	head, tail *chunk
	bytes      int
	end        error // why the reader stopped, once it has
	closed     bool  // the socket was closed here: nothing more is taken
	ready      chan struct{}
	room       chan struct{}
}

func (q *inbox) init() {
	q.ready, q.room = make(chan struct{}, 1), make(chan struct{}, 1)
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// put queues a copy of b and reports whether the queue is now over
// maxQueued.
func (q *inbox) put(b []byte) bool {
	ck := newChunk(b)
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		freeChunk(ck)
		return false
	}
	if q.tail == nil {
		q.head = ck
	} else {
		q.tail.next = ck
	}
	q.tail = ck
	q.bytes += len(b)
	full := q.bytes > maxQueued
	q.mu.Unlock()
	signal(q.ready)
	return full
}

// waitRoom waits until the queue is back within maxQueued, or closed.
func (q *inbox) waitRoom() {
	for {
		q.mu.Lock()
		ok := q.bytes <= maxQueued || q.closed
		q.mu.Unlock()
		if ok {
			return
		}
		<-q.room
	}
}

// finish queues the reader's end.
func (q *inbox) finish(err error) {
	q.mu.Lock()
	q.end = err
	q.mu.Unlock()
	signal(q.ready)
}

// shut drops what is queued and ends the queue with net.ErrClosed.
func (q *inbox) shut() {
	q.mu.Lock()
	q.closed = true
	for ck := q.head; ck != nil; {
		next := ck.next
		freeChunk(ck)
		ck = next
	}
	q.head, q.tail, q.bytes = nil, nil, 0
	q.mu.Unlock()
	signal(q.ready)
	signal(q.room)
}

// take waits for the next chunk, and returns the reader's end once every
// chunk before it was taken, or net.ErrClosed once the socket was closed
// here.
func (q *inbox) take() (*chunk, error) {
	for {
		q.mu.Lock()
		switch {
		case q.closed:
			q.mu.Unlock()
			return nil, net.ErrClosed
		case q.head != nil:
			ck := q.head
			q.head = ck.next
			if q.head == nil {
				q.tail = nil
			}
			q.bytes -= len(ck.b)
			q.mu.Unlock()
			signal(q.room)
			return ck, nil
		case q.end != nil:
			err := q.end
			q.mu.Unlock()
			return nil, err
		}
		q.mu.Unlock()
		<-q.ready
	}
}

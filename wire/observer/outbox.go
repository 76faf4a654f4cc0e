package observer

import "sync"

// outbox is the queue between the relay's writes to a socket and the
// parser of that direction: a copy of each chunk as it was written,
// stamped with the instant before its write, which a goroutine of the
// socket's own parses and records (Socket.drain). The relay's next write
// never waits for the parse of the last one, so recording adds no
// parsing to the byte path's latency; what it costs in CPU is spent beside
// the path, on another core where there is one.
//
// A drain runs only while there is something to parse: put starts one
// when none runs, and the drain ends once the queue is empty, so an idle
// socket holds no goroutine of its own. Past maxQueued bytes not parsed
// yet the relay's write waits for room (waitRoom), so a sink that cannot
// keep up holds the relay back, as it did when writes were parsed in line,
// and memory stays bounded.
type outbox struct {
	mu         sync.Mutex
	head, tail *chunk
	bytes      int
	running    bool // a drain is parsing
	ended      bool // the writes ended: the drain ends the parser after the last chunk
	room       chan struct{}
}

func (q *outbox) init() { q.room = make(chan struct{}, 1) }

// put queues a copy of b, written at at (t_us). It reports whether the
// caller must start a drain (none runs), and whether the queue is now over
// maxQueued.
func (q *outbox) put(b []byte, at int64) (start, full bool) {
	ck := newChunk(b)
	ck.at = at
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.tail == nil {
		q.head = ck
	} else {
		q.tail.next = ck
	}
	q.tail = ck
	q.bytes += len(ck.b)
	start = !q.running
	q.running = true
	return start, q.bytes > maxQueued
}

// finish marks the writes ended. It reports whether the caller must end
// the parser itself: nothing is queued and no drain runs. Otherwise the
// drain ends it after the last chunk.
func (q *outbox) finish() (inline bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ended = true
	return !q.running
}

// next returns the oldest chunk not parsed yet. With none, it returns
// end, true when the writes ended (the drain must end the parser), and
// marks the drain stopped: a later put starts another.
func (q *outbox) next() (ck *chunk, end bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ck = q.head; ck != nil {
		q.head = ck.next
		if q.head == nil {
			q.tail = nil
		}
		q.bytes -= len(ck.b)
		signal(q.room)
		return ck, false
	}
	q.running = false
	return nil, q.ended
}

// waitRoom waits until the queue is back within maxQueued.
func (q *outbox) waitRoom() {
	for {
		q.mu.Lock()
		ok := q.bytes <= maxQueued
		q.mu.Unlock()
		if ok {
			return
		}
		<-q.room
	}
}

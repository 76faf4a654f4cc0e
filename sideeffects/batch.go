package sideeffects

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// # Group commit in the client
//
// Every Record call of a [Client] joins a queue. A sender takes what is
// queued (within a batch's bounds) and posts it as one JSON array to
// POST /records; the service stores the array with one write and one fsync
// and answers only once all of it is durable, and the sender then releases
// each caller with its own record's n. While a request is in flight new calls
// queue behind it.
//
// How long a batch waits to fill is bounded and adaptive. The sender keeps
// an estimate of how many records are sent at once (the most it saw queued
// or in flight, decaying by 1/16 per batch), and before it sends it lingers
// until the queue holds that many records, or the batch's record bound, or
// the linger has passed. A lone writer's estimate is one, so its record goes
// out at once; fifty writers released together by one answer are back in the
// queue within microseconds, and without the wait the first of them would
// leave alone and the rest would queue a whole round trip behind it.
//
// A caller's records are validated before they are queued, so a bad record
// is refused to its own caller and cannot spoil a batch it shares. The
// records of one RecordAll call travel in one request, keeping its all or
// none. Should a shared batch still be refused (a 4xx: a server with smaller
// limits), each caller's records are sent again alone, so that each caller
// gets the answer to its own records. A batch is sent, and retried, while
// any of its callers still waits; once all have given up (their contexts
// ended), the send is cancelled.

// Defaults of the group commit: the bounds of one batch lie far inside the
// service's MaxBatch and MaxBodyBytes.
const (
	defaultBatchRecords = 1000
	defaultBatchBytes   = 1 << 20
	defaultLinger       = 500 * time.Microsecond
)

// group is one caller's records, marshalled, with the caller's answer.
type group struct {
	lines [][]byte
	size  int
	ctx   context.Context
	ns    []int64
	err   error
	done  chan struct{}
}

// batcher is a Client's queue of groups and its senders.
type batcher struct {
	records int           // most records in one request (a larger group goes alone)
	bytes   int           // most body bytes in one request (likewise)
	linger  time.Duration // longest a sender waits for a batch to fill
	senders int           // most requests in flight at once

	mu       sync.Mutex
	queue    []*group
	queued   int           // records in queue
	inflight int           // records in requests not yet answered
	sending  int           // running senders
	expect   int           // estimate of the records sent at once
	more     chan struct{} // signalled when a group is queued
}

func newBatcher(records, bytes int, linger time.Duration, senders int) batcher {
	return batcher{records: records, bytes: bytes, linger: linger, senders: senders, more: make(chan struct{}, 1)}
}

// submit queues g and starts a sender if fewer than b.senders are running.
func (b *batcher) submit(g *group, send func([]*group)) {
	b.mu.Lock()
	b.queue = append(b.queue, g)
	b.queued += len(g.lines)
	b.expect = max(b.expect, b.queued+b.inflight)
	start := b.sending < b.senders
	if start {
		b.sending++
	}
	b.mu.Unlock()
	select {
	case b.more <- struct{}{}:
	default:
	}
	if start {
		go b.drain(send)
	}
}

// drain sends batches until the queue is empty.
func (b *batcher) drain(send func([]*group)) {
	for {
		b.fill()
		batch := b.take()
		if batch == nil {
			return
		}
		send(batch)
		b.mu.Lock()
		for _, g := range batch {
			b.inflight -= len(g.lines)
		}
		b.mu.Unlock()
		// Release the callers only now, so that one calling again at
		// once does not find its last record still counted in flight.
		for _, g := range batch {
			close(g.done)
		}
	}
}

// fill waits, at most b.linger, until the queue holds as many records as are
// expected at once, or a full batch.
func (b *batcher) fill() {
	var timer *time.Timer
	for {
		b.mu.Lock()
		want := min(b.expect, b.records) - b.inflight
		ready := b.queued >= want || b.queued == 0
		b.mu.Unlock()
		if ready {
			break
		}
		if timer == nil {
			timer = time.NewTimer(b.linger)
			defer timer.Stop()
		}
		select {
		case <-b.more:
		case <-timer.C:
			return
		}
	}
}

// take removes the next batch from the queue: at least one group, then more
// while the batch stays within its bounds. It returns nil, and counts its
// sender out, when the queue is empty.
func (b *batcher) take() []*group {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expect -= (b.expect + 15) / 16
	if len(b.queue) == 0 {
		b.sending--
		return nil
	}
	n, recs, size := 1, len(b.queue[0].lines), b.queue[0].size
	for ; n < len(b.queue); n++ {
		g := b.queue[n]
		if recs+len(g.lines) > b.records || size+g.size > b.bytes {
			break
		}
		recs, size = recs+len(g.lines), size+g.size
	}
	batch := append([]*group(nil), b.queue[:n]...)
	b.queue = append(b.queue[:0], b.queue[n:]...)
	clear(b.queue[len(b.queue):cap(b.queue)]) // let sent groups go
	b.queued -= recs
	b.inflight += recs
	return batch
}

// arrayBody joins the batch's records into one JSON array.
func arrayBody(batch []*group) []byte {
	size := 2
	for _, g := range batch {
		size += g.size
	}
	body := make([]byte, 0, size)
	body = append(body, '[')
	for _, g := range batch {
		for _, l := range g.lines {
			if len(body) > 1 {
				body = append(body, ',')
			}
			body = append(body, l...)
		}
	}
	return append(body, ']')
}

// sendContext returns a context that ends once every group's caller has
// stopped waiting.
func sendContext(batch []*group) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	waiting := len(batch)
	stops := make([]func() bool, len(batch))
	for i, g := range batch {
		stops[i] = context.AfterFunc(g.ctx, func() {
			mu.Lock()
			defer mu.Unlock()
			if waiting--; waiting == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// sendBatch posts batch as one request and sets every group's answer; the
// caller releases the groups.
func (c *Client) sendBatch(batch []*group) {
	ctx, cancel := sendContext(batch)
	defer cancel()
	var resp postResponse
	err := c.retry(ctx, func() error { return c.post(ctx, arrayBody(batch), &resp) })
	if err != nil && len(batch) > 1 && isRejected(err) {
		for _, g := range batch {
			c.sendBatch([]*group{g})
		}
		return
	}
	sent := 0
	for _, g := range batch {
		sent += len(g.lines)
	}
	if err == nil && len(resp.Stored) != sent {
		err = fmt.Errorf("ledger client: %d records acknowledged, %d sent", len(resp.Stored), sent)
	}
	at := 0
	for _, g := range batch {
		if err == nil {
			g.ns = make([]int64, len(g.lines))
			for i := range g.lines {
				g.ns[i] = resp.Stored[at+i].N
			}
		}
		at += len(g.lines)
		g.err = err
	}
}

// newGroup marshals recs for the queue.
func newGroup(ctx context.Context, recs []Record) (*group, error) {
	g := &group{ctx: ctx, lines: make([][]byte, len(recs)), done: make(chan struct{})}
	for i := range recs {
		b, err := json.Marshal(&recs[i])
		if err != nil {
			return nil, err
		}
		g.lines[i] = b
		g.size += len(b) + 1
	}
	return g, nil
}

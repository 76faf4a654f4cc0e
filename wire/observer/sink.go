package observer

import (
	"bytes"
	"slices"

	"github.com/chaosrun/chaosrun/wire"
)

// Sink receives a tap's records. Observe is called synchronously by the
// goroutine that carries the bytes a record describes, once they were
// passed on (queued for the relay by a socket's reader, or written to the
// socket by the relay): for one direction of one socket in the order of
// its bytes, and concurrently for different sockets and for the two
// directions of one socket, so it must be safe for concurrent use. Until
// it returns, that direction reads (or writes) nothing more: a slow sink
// slows the traffic, never loses records. A sink that panics loses the record,
// and the recording of that direction stops (see the package
// documentation); the traffic passes on.
//
// The record, and everything it points to, is valid only during the call:
// the tap reuses it for the next one, so as not to allocate per event. A
// sink that keeps a record keeps a [Clone] of it; one that encodes it (a
// wire.Writer) or reads it (a trigger) needs no copy.
type Sink interface {
	Observe(r *wire.Record)
}

// SinkFunc adapts a function to [Sink].
type SinkFunc func(r *wire.Record)

// Observe calls f(r).
func (f SinkFunc) Observe(r *wire.Record) { f(r) }

// Clone returns a copy of r that shares nothing with it.
func Clone(r *wire.Record) *wire.Record {
	c := *r
	if r.Header != nil {
		h := *r.Header
		c.Header = &h
	}
	c.Messages = slices.Clone(r.Messages)
	for i := range c.Messages {
		m := &c.Messages[i]
		m.Args = bytes.Clone(m.Args)
		m.Progress, m.Total = cloneFloat(m.Progress), cloneFloat(m.Total)
	}
	return &c
}

func cloneFloat(f *float64) *float64 {
	if f == nil {
		return nil
	}
	v := *f
	return &v
}

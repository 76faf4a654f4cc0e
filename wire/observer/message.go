package observer

import "github.com/chaosrun/chaosrun/wire"

// recorder takes the records a parser makes; the connection stamps them
// (time, edge, connection) and hands them to the sink.
type recorder interface{ record(r *wire.Record) }

// parseState is where a stream parser is.
type parseState int

const (
	inHead   parseState = iota // in a header section
	inBody                     // in a body
	inBroken                   // parsing stopped: the rest passes unread
)

// messages is what the request and response parsers share: one direction
// of a connection read as a sequence of HTTP/1.x messages, each a header
// section and then a body.
type messages struct {
	out   recorder
	state parseState
	// read and unread count the bytes fed: read by the parser, or passed
	// unread after it stopped.
	read, unread int64
	unit         int64 // bytes of the message so far
	head         head
	f            fields
	body         body
	rec          wire.Record // the record being made (see Sink: reused)
}

// kind is what a parser knows of its kind of message.
type kind interface {
	headSink
	dataSink
	headDone()
	complete(problem string)
	breakdown(problem string)
}

// next starts on the next message.
func (m *messages) next() {
	m.state, m.unit = inHead, 0
	m.head.reset(false)
	m.f.reset()
	m.body.reset(bodyNone, 0)
}

// feed reads bytes that have just been passed on.
func (m *messages) feed(b []byte, k kind) {
	for len(b) > 0 && m.state != inBroken {
		var (
			n       int
			done    bool
			problem string
		)
		if m.state == inHead {
			n, done, problem = m.head.feed(b, k)
		} else {
			n, done, problem = m.body.feed(b, k)
		}
		m.unit, m.read = m.unit+int64(n), m.read+int64(n)
		b = b[n:]
		switch {
		case problem != "":
			k.breakdown(problem)
		case done && m.state == inHead:
			k.headDone()
		case done:
			k.complete("")
		}
	}
	m.unread += int64(len(b))
}

// malformed records that the message x could not be read, and stops.
func (m *messages) malformed(x int64, problem string) {
	m.rec = wire.Record{Kind: wire.KindMalformed, Exchange: x, Problem: problem, Size: m.unit}
	m.out.record(&m.rec)
	m.state = inBroken
}

package observer

import (
	"bytes"
	"fmt"

	"github.com/chaosrun/chaosrun/wire"
)

// maxMethodBytes bounds a request method: longer is not HTTP.
const maxMethodBytes = 32

// requestParser reads the client-to-server direction of one connection as
// a sequence of HTTP/1.x requests.
type requestParser struct {
	messages
	pair *pairing

	x            int64 // the request being read, from 1
	sp           bool  // the start line's method has ended
	method, path string
	kept         []byte // the body, up to MaxBodyBytes
	over         bool   // the body was larger than kept
}

func newRequestParser(out recorder, pair *pairing) *requestParser {
	p := &requestParser{messages: messages{out: out}, pair: pair}
	p.next()
	return p
}

// next starts reading the next request.
func (p *requestParser) next() {
	p.messages.next()
	p.x, p.sp = p.x+1, false
	p.method, p.path, p.kept, p.over = "", "", shrink(p.kept), false
}

// feed reads bytes that have just been passed on.
func (p *requestParser) feed(b []byte) { p.messages.feed(b, p) }

// end reads the end of the direction: a request cut short is recorded.
func (p *requestParser) end() {
	switch {
	case p.state == inHead && p.head.n > 0:
		p.breakdown("request cut by the connection's end")
	case p.state == inBody:
		p.complete(p.body.cut())
	}
	p.state = inBroken
}

func (p *requestParser) headDone() {
	mode, length := bodyNone, int64(0)
	switch {
	case p.f.chunked:
		mode = bodyChunked
	case p.f.encoded:
		p.breakdown("request Transfer-Encoding does not end in chunked")
		return
	case p.f.contentLength > 0:
		mode, length = bodyLength, p.f.contentLength
	}
	p.pair.header(p.x, p.method)
	if mode == bodyNone {
		p.complete("")
		return
	}
	p.state = inBody
	p.body.reset(mode, length)
}

// complete records the request and starts on the next one. A problem says
// the body did not pass in full.
func (p *requestParser) complete(problem string) {
	r := &p.rec
	*r = wire.Record{Kind: wire.KindRequest, Exchange: p.x, Method: p.method, Path: p.path,
		Header: p.f.header(), Size: p.body.size, Problem: problem}
	switch {
	case problem != "" || r.Size == 0:
	case p.over:
		r.Problem = fmt.Sprintf("body over %d bytes: not read as JSON-RPC", MaxBodyBytes)
	default:
		r.Messages = bodyMessages(p.kept)
	}
	p.out.record(r)
	p.pair.recorded(p.x)
	p.next()
}

func (p *requestParser) breakdown(problem string) {
	p.malformed(p.x, problem)
	p.kept = nil
	p.pair.stop()
}

// data keeps body bytes for the record, up to MaxBodyBytes.
func (p *requestParser) data(b []byte) {
	if p.over || len(p.kept)+len(b) > MaxBodyBytes {
		p.over, p.kept = true, shrink(p.kept)
		return
	}
	p.kept = keep(p.kept, b, MaxBodyBytes)
}

// check refuses, byte by byte, a start line that cannot begin a request.
func (p *requestParser) check(i int, c byte) string {
	switch {
	case p.sp:
		return ""
	case c == ' ' && i > 0:
		p.sp = true
		return ""
	case !tchar(c) || i >= maxMethodBytes:
		return fmt.Sprintf("not an HTTP/1.x request: byte %q at %d of the request line", c, i)
	}
	return ""
}

func (p *requestParser) start(line []byte) string {
	method, rest, _ := bytes.Cut(line, []byte(" "))
	target, version, ok := bytes.Cut(rest, []byte(" "))
	switch {
	case string(method) == "PRI" && string(target) == "*" && string(version) == "HTTP/2.0":
		return "HTTP/2 connection preface: not read"
	case !ok || len(target) == 0 || !httpVersion(version):
		return "not an HTTP/1.x request line: " + quote(line)
	}
	p.method, p.path = string(method), string(target)
	return ""
}

func (p *requestParser) field(name, value []byte) string { return p.f.take(name, value) }

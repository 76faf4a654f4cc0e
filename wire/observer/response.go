package observer

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// responseParser reads the server-to-client direction of one connection as
// a sequence of HTTP/1.x responses, the n-th final response answering the
// n-th request.
type responseParser struct {
	messages
	pair *pairing

	x      int64 // final responses so far: the one being read once its header passed
	status int
	sse    *sseParser // set while an SSE body is read
	keep   int        // how much of the body to keep: a JSON or an error body
	kept   []byte     // the body, up to keep
	over   bool       // the body was larger than keep
}

func newResponseParser(out recorder, pair *pairing) *responseParser {
	p := &responseParser{messages: messages{out: out}, pair: pair}
	p.next()
	return p
}

// next starts reading the next response (or the final response after an
// informational one).
func (p *responseParser) next() {
	p.messages.next()
	p.status, p.sse = 0, nil
	p.keep, p.kept, p.over = 0, shrink(p.kept), false
}

// feed reads bytes that have just been passed on.
func (p *responseParser) feed(b []byte) { p.messages.feed(b, p) }

// end reads the end of the direction. A body delimited by the close is
// complete; one the close cut short is recorded with a problem, and an SSE
// event cut in half is malformed.
func (p *responseParser) end() {
	switch {
	case p.state == inHead && p.head.n > 0:
		p.breakdown("response cut by the connection's end")
	case p.state == inBody && p.sse != nil:
		p.sse.end()
	case p.state == inBody && p.body.mode == bodyClose:
		p.complete("")
	case p.state == inBody:
		p.complete(p.body.cut())
	}
	p.state = inBroken
}

func (p *responseParser) headDone() {
	if p.status >= 100 && p.status < 200 && p.status != http.StatusSwitchingProtocols {
		p.next() // an informational response: the final one follows
		return
	}
	p.x++
	method := p.pair.method(p.x)
	switch {
	case p.status == http.StatusSwitchingProtocols:
		p.record("")
		p.breakdown("101 Switching Protocols: the new protocol is not read")
		return
	case method == http.MethodConnect && p.status/100 == 2:
		p.record("")
		p.breakdown("CONNECT tunnel: not read")
		return
	}
	mode, length := bodyClose, int64(-1)
	switch {
	case method == http.MethodHead || p.status == http.StatusNoContent || p.status == http.StatusNotModified:
		mode = bodyNone
	case p.f.chunked:
		mode = bodyChunked
	case p.f.encoded:
	case p.f.contentLength == 0:
		mode = bodyNone
	case p.f.contentLength > 0:
		mode, length = bodyLength, p.f.contentLength
	}
	if mode == bodyNone {
		p.complete("")
		return
	}
	p.state = inBody
	p.body.reset(mode, length)
	if mcp.HasMediaType(p.f.hdr.ContentType, mcp.ContentTypeSSE) {
		p.record("")
		p.sse = newSSE(p.out, p.x)
		return
	}
	switch {
	case mcp.HasMediaType(p.f.hdr.ContentType, mcp.ContentTypeJSON):
		p.keep = MaxBodyBytes
	case p.status >= 400:
		p.keep = wire.MaxErrorBody
	}
}

// complete ends the response: the record of a body that is not a stream,
// or the body_end of a stream.
func (p *responseParser) complete(problem string) {
	if p.sse != nil {
		p.sse.end()
		p.rec = wire.Record{Kind: wire.KindBodyEnd, Exchange: p.x, Size: p.body.size}
		p.out.record(&p.rec)
	} else {
		p.record(problem)
	}
	p.next()
}

// record records the response: at its header for a stream, at its end
// otherwise.
func (p *responseParser) record(problem string) {
	r := &p.rec
	*r = wire.Record{Kind: wire.KindResponse, Exchange: p.x, Status: p.status, Header: p.f.header(), Problem: problem}
	if p.sse == nil && p.state == inBody {
		r.Size = p.body.size
	}
	if p.status >= 400 && len(p.kept) > 0 {
		r.ErrorBody = string(p.kept[:min(len(p.kept), wire.MaxErrorBody)])
	}
	switch {
	case problem != "" || p.keep != MaxBodyBytes || r.Size == 0:
	case p.over:
		r.Problem = fmt.Sprintf("body over %d bytes: not read as JSON-RPC", MaxBodyBytes)
	default:
		r.Messages = bodyMessages(p.kept)
	}
	p.out.record(r)
}

func (p *responseParser) breakdown(problem string) {
	p.malformed(p.x, problem)
	p.kept, p.sse = nil, nil
}

// data passes a stream's bytes to the SSE parser, or keeps a body's for
// its record.
func (p *responseParser) data(b []byte) {
	switch {
	case p.sse != nil:
		p.sse.feed(b)
	case p.over || p.keep == 0:
	case len(p.kept)+len(b) > p.keep:
		p.kept = keep(p.kept, b[:p.keep-len(p.kept)], p.keep)
		p.over = true
	default:
		p.kept = keep(p.kept, b, p.keep)
	}
}

// check refuses, byte by byte, a status line that does not begin "HTTP/".
func (p *responseParser) check(i int, c byte) string {
	const prefix = "HTTP/"
	if i < len(prefix) && c != prefix[i] {
		return fmt.Sprintf("not an HTTP/1.x response: byte %q at %d of the status line", c, i)
	}
	return ""
}

func (p *responseParser) start(line []byte) string {
	version, rest, _ := bytes.Cut(line, []byte(" "))
	code, _, _ := bytes.Cut(rest, []byte(" "))
	status, err := strconv.Atoi(string(code))
	if !httpVersion(version) || len(code) != 3 || err != nil || status < 100 {
		return "not an HTTP/1.x status line: " + quote(line)
	}
	p.status = status
	return ""
}

func (p *responseParser) field(name, value []byte) string { return p.f.take(name, value) }

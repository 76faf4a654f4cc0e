package observer

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Bounds of what a parser keeps; see the package documentation.
const (
	// MaxHeaderBytes bounds the header section of a request or response
	// (start line, fields and the empty line that ends them), and the
	// trailer section of a chunked body.
	MaxHeaderBytes = 64 << 10
	// MaxBodyBytes bounds the JSON body a request or response record is
	// read from, and the data of one SSE event read as a message.
	MaxBodyBytes = mcp.MaxEventBytes
	// maxLineBytes bounds a start line and a chunk-size line.
	maxLineBytes = 8 << 10
	// keepBytes is the capacity above which a buffer is dropped after use
	// rather than kept for the next request, response or event.
	keepBytes = 64 << 10
)

// head reads one header section (a start line and its fields up to the
// empty line) incrementally. It keeps only the current line.
type head struct {
	line    []byte
	n       int  // bytes of the section so far
	started bool // the start line is complete
	// trailer reads a chunked body's trailer section: no start line.
	trailer bool
}

// headSink receives what a header section holds. check sees each byte of
// the start line as it arrives (so that bytes that cannot begin an HTTP
// message are refused at once, whatever the chunking); start gets the
// complete start line and field each field line. A non-empty result is a
// problem: the section cannot be read.
type headSink interface {
	check(i int, c byte) string
	start(line []byte) string
	field(name, value []byte) string
}

func (h *head) reset(trailer bool) {
	h.line, h.n, h.started, h.trailer = h.line[:0], 0, trailer, trailer
}

// feed consumes bytes of the section from b. It returns how many it
// consumed, whether the section is complete, and a problem that ends
// parsing.
func (h *head) feed(b []byte, s headSink) (n int, done bool, problem string) {
	for n < len(b) {
		if !h.started && len(h.line) == 0 && (b[n] == '\r' || b[n] == '\n') {
			n++ // empty lines before a start line are ignored
			continue
		}
		end := bytes.IndexByte(b[n:], '\n')
		run := b[n:]
		if end >= 0 {
			run = b[n : n+end+1]
		}
		if limit := h.limit(); len(h.line)+len(run) > limit {
			run = run[:max(0, limit-len(h.line))]
			n, h.n = n+len(run)+1, h.n+len(run)+1
			return n, false, h.overflow()
		}
		if !h.started {
			for i, c := range run {
				if p := s.check(len(h.line)+i, c); p != "" {
					n, h.n = n+i+1, h.n+i+1
					return n, false, p
				}
			}
		}
		h.line = append(h.line, run...)
		n, h.n = n+len(run), h.n+len(run)
		if end < 0 {
			return n, false, ""
		}
		line := bytes.TrimSuffix(h.line[:len(h.line)-1], []byte("\r"))
		switch {
		case !h.started:
			h.started = true
			problem = s.start(line)
		case len(line) == 0:
			return n, true, ""
		case line[0] == ' ' || line[0] == '\t':
			// An obsolete line folding continues the previous field; no
			// field a record keeps is read from one.
		default:
			name, value, ok := bytes.Cut(line, []byte(":"))
			if !ok || len(name) == 0 || bytes.ContainsAny(name, " \t") {
				problem = "header line is not a field: " + quote(line)
			} else {
				problem = s.field(name, bytes.Trim(value, " \t"))
			}
		}
		h.line = h.line[:0]
		if problem != "" {
			return n, false, problem
		}
	}
	return n, false, ""
}

// limit is how long the current line may grow.
func (h *head) limit() int {
	left := MaxHeaderBytes - (h.n - len(h.line))
	if !h.started && !h.trailer {
		return min(left, maxLineBytes)
	}
	return left
}

func (h *head) overflow() string {
	switch {
	case h.trailer:
		return fmt.Sprintf("trailer section over %d bytes", MaxHeaderBytes)
	case !h.started:
		return fmt.Sprintf("start line over %d bytes", maxLineBytes)
	}
	return fmt.Sprintf("header section over %d bytes", MaxHeaderBytes)
}

// fields holds what the parsers read from the fields of a header section.
type fields struct {
	hdr           wire.Header
	contentLength int64 // -1 when absent
	chunked       bool  // Transfer-Encoding ends in chunked
	encoded       bool  // Transfer-Encoding is present
	upgrade       bool  // an Upgrade field is present
}

func (f *fields) reset() { *f = fields{contentLength: -1} }

// take reads one field. Names are matched case-insensitively; of a field
// given twice the first value is kept, except that two different
// Content-Length values are a problem, as they are to every HTTP/1.1
// implementation.
func (f *fields) take(name, value []byte) string {
	set := func(dst *string) {
		if *dst == "" {
			*dst = string(value)
		}
	}
	switch {
	case fold(name, "content-length"):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (f.contentLength >= 0 && f.contentLength != n) {
			return "bad Content-Length: " + quote(value)
		}
		f.contentLength = n
	case fold(name, "transfer-encoding"):
		f.encoded = true
		last := value
		if i := bytes.LastIndexByte(value, ','); i >= 0 {
			last = bytes.Trim(value[i+1:], " \t")
		}
		f.chunked = fold(last, "chunked")
	case fold(name, "upgrade"):
		f.upgrade = true
	case fold(name, mcp.HeaderSessionID):
		set(&f.hdr.SessionID)
	case fold(name, mcp.HeaderProtocolVersion):
		set(&f.hdr.ProtocolVersion)
	case fold(name, mcp.HeaderLastEventID):
		set(&f.hdr.LastEventID)
	case fold(name, "mcp-method"):
		set(&f.hdr.MCPMethod)
	case fold(name, "mcp-name"):
		set(&f.hdr.MCPName)
	case fold(name, "origin"):
		set(&f.hdr.Origin)
	case fold(name, "accept"):
		set(&f.hdr.Accept)
	case fold(name, "content-type"):
		set(&f.hdr.ContentType)
	}
	return ""
}

// header is the record's header: nil when no field a record keeps was
// present.
func (f *fields) header() *wire.Header {
	if f.hdr == (wire.Header{}) {
		return nil
	}
	h := f.hdr
	return &h
}

// fold reports whether b equals s in ASCII case-insensitive comparison.
func fold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// tchar reports whether c may appear in an HTTP token (a method, a field
// name).
func tchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// httpVersion reports whether v is HTTP/1.x.
func httpVersion(v []byte) bool {
	return len(v) == 8 && bytes.HasPrefix(v, []byte("HTTP/1.")) && '0' <= v[7] && v[7] <= '9'
}

// quote renders bytes for a problem text, cut to a readable length.
func quote(b []byte) string {
	const most = 64
	if len(b) > most {
		return strconv.Quote(string(b[:most])) + "..."
	}
	return strconv.Quote(string(b))
}

// shrink empties a buffer, dropping it when it grew large.
func shrink(b []byte) []byte {
	if cap(b) > keepBytes {
		return nil
	}
	return b[:0]
}

// keep appends b to dst, which may grow to limit (len(dst)+len(b) must not
// exceed it). Capacity doubles, so a buffer kept up to its limit costs at
// most twice the limit in allocations.
func keep(dst, b []byte, limit int) []byte {
	if need := len(dst) + len(b); need > cap(dst) {
		dst = append(make([]byte, 0, min(max(2*cap(dst), need, 512), limit)), dst...)
	}
	return append(dst, b...)
}

package observer

import (
	"bytes"
	"fmt"
	"strconv"
)

// bodyMode is how a message body is delimited.
type bodyMode int

const (
	bodyNone    bodyMode = iota // no body
	bodyLength                  // Content-Length bytes
	bodyChunked                 // chunked transfer coding
	bodyClose                   // until the connection's end (a response only)
)

// chunkState is where a chunked body's decoder is.
type chunkState int

const (
	chunkSize    chunkState = iota // in a chunk-size line
	chunkData                      // in a chunk's data
	chunkCR                        // after a chunk's data, before its CRLF
	chunkLF                        // after that CR
	chunkTrailer                   // in the trailer section after the last chunk
)

// dataSink receives a body's decoded bytes.
type dataSink interface{ data(b []byte) }

// body decodes one message body incrementally, passing its content on as
// it arrives and keeping only a chunk-size line.
type body struct {
	mode  bodyMode
	left  int64 // bytes left: of the body (length) or of the chunk (chunked)
	state chunkState
	line  []byte
	trail head
	size  int64 // decoded bytes so far
}

func (d *body) reset(mode bodyMode, length int64) {
	d.mode, d.left, d.state, d.line, d.size = mode, length, chunkSize, d.line[:0], 0
}

// feed consumes body bytes from b. It returns how many it consumed,
// whether the body is complete, and a problem that ends parsing.
func (d *body) feed(b []byte, s dataSink) (n int, done bool, problem string) {
	switch d.mode {
	case bodyNone:
		return 0, true, ""
	case bodyClose:
		d.pass(b, s)
		return len(b), false, ""
	case bodyLength:
		n = int(min(d.left, int64(len(b))))
		d.pass(b[:n], s)
		d.left -= int64(n)
		return n, d.left == 0, ""
	}
	for n < len(b) {
		var k int
		k, done, problem = d.chunk(b[n:], s)
		n += k
		if done || problem != "" {
			return n, done, problem
		}
	}
	return n, false, ""
}

// chunk takes one step of the chunked decoder.
func (d *body) chunk(b []byte, s dataSink) (n int, done bool, problem string) {
	switch d.state {
	case chunkSize:
		return d.sizeLine(b)
	case chunkData:
		n = int(min(d.left, int64(len(b))))
		d.pass(b[:n], s)
		if d.left -= int64(n); d.left == 0 {
			d.state = chunkCR
		}
		return n, false, ""
	case chunkCR, chunkLF:
		switch {
		case b[0] == '\n':
			d.state = chunkSize
		case b[0] == '\r' && d.state == chunkCR:
			d.state = chunkLF
		default:
			return 1, false, "chunk data not followed by CRLF"
		}
		return 1, false, ""
	}
	n, done, problem = d.trail.feed(b, trailerFields{})
	return n, done, problem
}

// sizeLine reads a chunk-size line: hex digits, then optional extensions.
func (d *body) sizeLine(b []byte) (int, bool, string) {
	if n, size, ok := quickSize(b); ok && len(d.line) == 0 {
		d.state, d.left = chunkData, size
		return n, false, ""
	}
	end := bytes.IndexByte(b, '\n')
	run := b
	if end >= 0 {
		run = b[:end+1]
	}
	if len(d.line)+len(run) > maxLineBytes {
		return maxLineBytes - len(d.line) + 1, false, fmt.Sprintf("chunk-size line over %d bytes", maxLineBytes)
	}
	d.line = append(d.line, run...)
	if end < 0 {
		return len(run), false, ""
	}
	line := bytes.TrimRight(d.line, "\r\n")
	hexDigits, _, _ := bytes.Cut(line, []byte(";"))
	hexDigits = bytes.TrimRight(hexDigits, " \t")
	size, err := strconv.ParseUint(string(hexDigits), 16, 62)
	if err != nil {
		return len(run), false, "bad chunk-size line: " + quote(line)
	}
	d.line = d.line[:0]
	if size == 0 {
		d.state = chunkTrailer
		d.trail.reset(true)
	} else {
		d.state, d.left = chunkData, int64(size)
	}
	return len(run), false, ""
}

func (d *body) pass(b []byte, s dataSink) {
	if len(b) > 0 {
		d.size += int64(len(b))
		s.data(b)
	}
}

// cut describes a body that the connection's end cut short.
func (d *body) cut() string {
	if d.mode == bodyLength {
		return fmt.Sprintf("body cut by the connection's end after %d bytes, %d short", d.size, d.left)
	}
	return fmt.Sprintf("chunked body cut by the connection's end after %d bytes", d.size)
}

// trailerFields reads a trailer section, keeping nothing of it.
type trailerFields struct{}

func (trailerFields) check(int, byte) string   { return "" }
func (trailerFields) start([]byte) string      { return "" }
func (trailerFields) field(_, _ []byte) string { return "" }

// quickSize reads the common chunk-size line, hex digits and CRLF whole in
// b, without copying it; other lines take the general way.
func quickSize(b []byte) (n int, size int64, ok bool) {
	for n < len(b) && n < 15 {
		c := b[n]
		switch {
		case '0' <= c && c <= '9':
			size = size<<4 | int64(c-'0')
		case 'a' <= c && c <= 'f':
			size = size<<4 | int64(c-'a'+10)
		case 'A' <= c && c <= 'F':
			size = size<<4 | int64(c-'A'+10)
		default:
			ok = n > 0 && size > 0 && n+1 < len(b) && c == '\r' && b[n+1] == '\n'
			return n + 2, size, ok
		}
		n++
	}
	return 0, 0, false
}

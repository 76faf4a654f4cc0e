package observer

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/chaosrun/chaosrun/wire"
)

// maxFieldBytes bounds the value of an SSE id, event or retry field.
const maxFieldBytes = 1 << 10

// sseLine is where the SSE parser is within a line.
type sseLine int

const (
	lineStart   sseLine = iota // at the start of a line
	lineName                   // in a field name
	lineValue                  // in a field value
	lineComment                // in a comment line
	lineLF                     // after a CR: an LF here belongs to it
)

// sseField is the field a line sets.
type sseField int

const (
	fieldOther sseField = iota
	fieldData
	fieldID
	fieldEvent
	fieldRetry
)

// sseParser reads an SSE body incrementally (the event stream format of
// the HTML standard: lines end in CRLF, LF or CR; an empty line ends an
// event). It keeps one field value and, up to MaxBodyBytes, one event's
// data; each event is recorded as it ends.
type sseParser struct {
	out recorder
	x   int64

	line    sseLine
	name    [8]byte // the field name so far; longer names set no field
	nameLen int
	field   sseField
	first   bool  // the next value byte is the first of the value
	comment int64 // bytes of the comment line so far

	val     []byte // an id, event or retry value
	valOver bool

	// The event being read.
	fields   bool  // a field line has been read
	unit     int64 // bytes of the event so far
	id       string
	hasID    bool
	typ      string
	retry    int64
	data     []byte
	dataSize int64
	dataLine bool // a data line has been read
	problem  string

	// The record of an event or comment and its message, made again for
	// each (see Sink: a sink does not keep them).
	rec  wire.Record
	msg  [1]wire.Message
	nums [2]float64
	in   interner
}

func newSSE(out recorder, x int64) *sseParser { return &sseParser{out: out, x: x} }

// feed reads stream bytes.
func (s *sseParser) feed(b []byte) {
	for len(b) > 0 {
		n := s.step(b)
		s.unit += int64(n)
		b = b[n:]
	}
}

// step consumes at least one byte of b.
func (s *sseParser) step(b []byte) int {
	switch s.line {
	case lineLF:
		s.line = lineStart
		if b[0] == '\n' {
			return 1
		}
		return 0
	case lineStart:
		switch b[0] {
		case '\r', '\n':
			s.dispatch()
			return s.eol(b[0])
		case ':':
			s.line, s.comment = lineComment, 0
		default:
			s.line, s.nameLen, s.field = lineName, 0, fieldOther
		}
		if !s.fields {
			s.unit = 0 // an event (or a comment line) begins here
		}
		return 0
	case lineComment:
		i := lineEnd(b)
		if i < 0 {
			s.comment += int64(len(b))
			return len(b)
		}
		s.comment += int64(i)
		s.rec = wire.Record{Kind: wire.KindComment, Exchange: s.x, Size: s.comment}
		s.out.record(&s.rec)
		return i + s.eol(b[i])
	case lineName:
		return s.readName(b)
	}
	return s.readValue(b)
}

// eol ends a line on c (CR or LF); after a CR, a following LF is skipped.
func (s *sseParser) eol(c byte) int {
	s.line = lineStart
	if c == '\r' {
		s.line = lineLF
	}
	return 1
}

func (s *sseParser) readName(b []byte) int {
	for i, c := range b {
		switch c {
		case ':', '\r', '\n':
			s.fields = true
			s.field = s.fieldOf(s.name[:min(s.nameLen, len(s.name))])
			s.val, s.valOver = s.val[:0], false
			if c == ':' {
				s.line, s.first = lineValue, true
				return i + 1
			}
			s.value() // a line of only a name sets that field to ""
			return i + s.eol(c)
		}
		if s.nameLen < len(s.name) {
			s.name[s.nameLen] = c
		}
		s.nameLen++
	}
	return len(b)
}

func (s *sseParser) fieldOf(name []byte) sseField {
	if s.nameLen > len(s.name) {
		return fieldOther
	}
	switch string(name) {
	case "data":
		if s.dataLine {
			s.appendData([]byte("\n"))
		}
		s.dataLine = true
		return fieldData
	case "id":
		return fieldID
	case "event":
		return fieldEvent
	case "retry":
		return fieldRetry
	}
	return fieldOther
}

func (s *sseParser) readValue(b []byte) int {
	n := 0
	if s.first {
		s.first = false
		if b[0] == ' ' {
			n = 1
		}
	}
	i := lineEnd(b[n:])
	run := b[n:]
	if i >= 0 {
		run = b[n : n+i]
	}
	switch s.field {
	case fieldData:
		s.appendData(run)
	case fieldID, fieldEvent, fieldRetry:
		if len(s.val)+len(run) > maxFieldBytes {
			s.valOver = true
		} else {
			s.val = append(s.val, run...)
		}
	}
	n += len(run)
	if i < 0 {
		return n
	}
	s.value()
	return n + s.eol(b[n])
}

// value takes a complete field value.
func (s *sseParser) value() {
	v := s.val
	switch {
	case s.field != fieldID && s.field != fieldEvent && s.field != fieldRetry:
		return
	case s.valOver:
		s.problem = fmt.Sprintf("SSE field over %d bytes", maxFieldBytes)
		return
	}
	switch s.field {
	case fieldID:
		if bytes.IndexByte(v, 0) < 0 { // an id with NUL is ignored, as the standard says
			s.id, s.hasID = string(v), true
		}
	case fieldEvent:
		s.typ = string(v)
	case fieldRetry:
		if ms, err := strconv.ParseUint(string(v), 10, 63); err == nil && digits(v) {
			s.retry = int64(ms)
		}
	}
}

func (s *sseParser) appendData(b []byte) {
	s.dataSize += int64(len(b))
	switch {
	case s.dataSize > MaxBodyBytes:
		if s.problem == "" {
			s.problem = fmt.Sprintf("event data over %d bytes: not read as JSON-RPC", MaxBodyBytes)
		}
		s.data = shrink(s.data)
	default:
		s.data = keep(s.data, b, MaxBodyBytes)
	}
}

// dispatch records the event an empty line ends, if any field made one.
func (s *sseParser) dispatch() {
	if !s.fields {
		return
	}
	s.rec = wire.Record{Kind: wire.KindEvent, Exchange: s.x, EventID: s.id, EventType: s.typ, RetryMS: s.retry,
		Size: s.dataSize, Problem: s.problem, Priming: s.id != "" && s.dataSize == 0}
	if s.problem == "" && s.dataSize > 0 && (s.typ == "" || s.typ == "message") {
		m := &s.msg[0]
		*m = wire.Message{}
		if !fastMessage(s.data, m, &s.nums, &s.in) {
			*m = slowMessage(s.data)
		}
		s.rec.Messages = s.msg[:]
	}
	s.out.record(&s.rec)
	s.reset()
}

func (s *sseParser) reset() {
	s.fields, s.id, s.hasID, s.typ, s.retry = false, "", false, "", 0
	s.data, s.dataSize, s.dataLine, s.problem = shrink(s.data), 0, false, ""
}

// end reads the end of the body: an event not yet ended by an empty line
// was cut in half.
func (s *sseParser) end() {
	if s.fields || s.line == lineName || s.line == lineValue || s.line == lineComment {
		s.rec = wire.Record{Kind: wire.KindMalformed, Exchange: s.x, Size: s.unit,
			Problem: "SSE event cut by the end of the body"}
		s.out.record(&s.rec)
	}
	s.reset()
	s.line, s.unit = lineStart, 0
}

// digits reports whether b is only ASCII digits, as a retry value must be.
func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// lineEnd is the index of the first CR or LF in b, or -1.
func lineEnd(b []byte) int {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		i = len(b)
	}
	if j := bytes.IndexByte(b[:i], '\r'); j >= 0 {
		return j
	}
	if i == len(b) {
		return -1
	}
	return i
}

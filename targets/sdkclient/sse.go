package sdkclient

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// sseEvent is one dispatched Server-Sent Event as the client reads it.
type sseEvent struct {
	ID    string
	HasID bool
	Name  string
	Data  []byte
}

// eventScanner splits an SSE byte stream into events as the bytes pass by,
// so that the observing transport sees each event exactly when the SDK
// reading the same bytes can. Lines end with "\n" or "\r\n". A line or
// event longer than [mcp.MaxEventBytes] stops the scanner for good: the
// observation is lost, the SDK's reading is not affected.
type eventScanner struct {
	line    []byte
	ev      sseEvent
	data    []byte
	hasData bool
	dead    bool
	emit    func(sseEvent)
}

func (s *eventScanner) feed(p []byte) {
	for len(p) > 0 && !s.dead {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.line = append(s.line, p...)
			s.checkSize(len(s.line))
			return
		}
		s.line = append(s.line, p[:i]...)
		p = p[i+1:]
		if s.checkSize(len(s.line)) {
			return
		}
		s.handle(bytes.TrimSuffix(s.line, []byte("\r")))
		s.line = s.line[:0]
	}
}

// checkSize stops the scanner once n bytes exceed the event bound.
func (s *eventScanner) checkSize(n int) bool {
	if n+len(s.data) > mcp.MaxEventBytes {
		s.dead, s.line, s.data = true, nil, nil
	}
	return s.dead
}

func (s *eventScanner) handle(line []byte) {
	if len(line) == 0 {
		s.dispatch()
		return
	}
	if line[0] == ':' {
		return
	}
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "id":
		s.ev.ID, s.ev.HasID = string(value), true
	case "event":
		s.ev.Name = string(value)
	case "data":
		if s.hasData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.hasData = true
	}
}

func (s *eventScanner) dispatch() {
	if s.hasData || s.ev.HasID || s.ev.Name != "" {
		s.ev.Data = s.data
		s.emit(s.ev)
	}
	s.ev, s.data, s.hasData = sseEvent{}, nil, false
}

// ParseEventID maps an SSE event id to the integer the history records:
// a decimal id as is (the reference server, mcp-go's stores), the index
// after the last "_" for go-sdk's "<stream>_<index>" ids, and 0 for
// anything else.
func ParseEventID(id string) int64 {
	if i := strings.LastIndexByte(id, '_'); i >= 0 {
		id = id[i+1:]
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Classify names the class of a transport error as the history's
// stream_break reasons do: reset, eof, timeout or error.
func Classify(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error"
}

package mcp

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Event is one Server-Sent Event. An event with an ID and empty Data is a
// priming event (protocol 2025-11-25): it carries a cursor, no message.
type Event struct {
	ID    string
	Type  string        // the "event:" field; empty means "message"
	Data  []byte        // the joined "data:" lines
	Retry time.Duration // the "retry:" field; 0 when absent
}

// WriteEvent frames ev onto w. Data lines are split on newlines, as SSE
// requires; an event with neither data nor a type is written with one empty
// data line so that it is dispatched.
func WriteEvent(w io.Writer, ev Event) error {
	var b bytes.Buffer
	if ev.ID != "" {
		if strings.ContainsAny(ev.ID, "\r\n") {
			return errors.New("sse: event id contains a newline")
		}
		fmt.Fprintf(&b, "id: %s\n", ev.ID)
	}
	if ev.Type != "" {
		fmt.Fprintf(&b, "event: %s\n", ev.Type)
	}
	if ev.Retry > 0 {
		fmt.Fprintf(&b, "retry: %d\n", ev.Retry.Milliseconds())
	}
	lines := bytes.Split(ev.Data, []byte("\n"))
	for _, line := range lines {
		b.WriteString("data: ")
		b.Write(bytes.TrimSuffix(line, []byte("\r")))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// WriteComment writes an SSE comment line (used as a keepalive).
func WriteComment(w io.Writer, text string) error {
	_, err := fmt.Fprintf(w, ": %s\n\n", strings.ReplaceAll(text, "\n", " "))
	return err
}

// MaxEventBytes bounds one event's size when reading, so a hostile or broken
// peer cannot make a reader buffer without limit.
const MaxEventBytes = 4 << 20

// ErrEventTooLarge is returned by [EventReader.Next] for an event over
// [MaxEventBytes].
var ErrEventTooLarge = errors.New("sse: event too large")

// EventReader parses a Server-Sent Events stream.
type EventReader struct {
	r *bufio.Reader
	// OnActivity, if set, is called for every line read, comments included.
	// Clients use it to tell a silent stream from a live one.
	OnActivity func()
}

// NewEventReader reads events from r.
func NewEventReader(r io.Reader) *EventReader {
	return &EventReader{r: bufio.NewReaderSize(r, 32<<10)}
}

// Next returns the next dispatched event. Comment lines are skipped. At the
// end of the stream it returns io.EOF if the stream ended on an event
// boundary and io.ErrUnexpectedEOF if it ended inside an event; any other
// error is the underlying read error (a reset, a timeout).
func (er *EventReader) Next() (Event, error) {
	var ev Event
	var data bytes.Buffer
	hasData, inEvent := false, false
	for {
		line, err := er.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && inEvent {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if er.OnActivity != nil {
			er.OnActivity()
		}
		if line == "" {
			if !inEvent {
				continue
			}
			if hasData || ev.Type != "" || ev.ID != "" {
				ev.Data = data.Bytes()
				return ev, nil
			}
			ev, inEvent = Event{}, false
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		inEvent = true
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.ID = value
			}
		case "event":
			ev.Type = value
		case "retry":
			if ms, err := strconv.ParseInt(value, 10, 64); err == nil && ms >= 0 {
				ev.Retry = time.Duration(ms) * time.Millisecond
			}
		case "data":
			if hasData {
				data.WriteByte('\n')
			}
			hasData = true
			if data.Len()+len(value) > MaxEventBytes {
				return Event{}, ErrEventTooLarge
			}
			data.WriteString(value)
		}
	}
}

func (er *EventReader) readLine() (string, error) {
	var b []byte
	for {
		chunk, isPrefix, err := er.r.ReadLine()
		if err != nil {
			return "", err
		}
		b = append(b, chunk...)
		if len(b) > MaxEventBytes {
			return "", ErrEventTooLarge
		}
		if !isPrefix {
			return string(b), nil
		}
	}
}

// EventNumber renders an SSE event id as the integer histories and the
// checker carry: the id itself when it is a number, otherwise its trailing
// digits (the go-sdk's ids are "<stream>_<n>"), or 0.
func EventNumber(id string) int64 {
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		return n
	}
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n, _ := strconv.ParseInt(id[i:], 10, 64)
	return n
}

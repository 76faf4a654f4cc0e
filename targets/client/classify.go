package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ErrSilent is the transport error of a stream that stayed silent for
// longer than the read timeout: a client-side idle timeout.
var ErrSilent = errors.New("stream silent past the read timeout")

// Close is how a call's stream ended without its result: a transport error,
// an HTTP status other than 200 (to the POST or to a resuming GET), or a
// server close event.
type Close struct {
	// Status is the HTTP status of the answer; 0 when the connection failed
	// or the stream ended.
	Status int
	// Err is the transport error when Status is 0.
	Err error
	// CloseEvent reports that the server sent an SSE event of type close.
	CloseEvent bool
	// Body is the start of a non-2xx answer's body.
	Body []byte
	// LastEventID is the last event id persisted for the stream, or "" when
	// none was.
	LastEventID string
}

// Class is the history reason class of the close: reset, eof, timeout,
// status_NNN, close_event or error.
func (c Close) Class() string {
	switch {
	case c.CloseEvent:
		return "close_event"
	case c.Status != 0:
		return fmt.Sprintf("status_%d", c.Status)
	}
	return errClass(c.Err)
}

func errClass(err error) string {
	var ne net.Error
	switch {
	case err == nil:
		return "error"
	case errors.Is(err, ErrSilent):
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ECONNABORTED):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "eof"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "error"
}

// ActionKind is what the resumable client does about a [Close].
type ActionKind int

// The actions.
const (
	// Reconnect: GET with Last-Event-ID set to Action.LastEventID, after a
	// backoff.
	Reconnect ActionKind = iota + 1
	// ReconnectAtHead: surface Action.Gap, then reconnect with
	// Last-Event-ID set to the head (Action.LastEventID).
	ReconnectAtHead
	// Reinitialize: the session is gone; the in-flight call's outcome is
	// unknown unless it is safe to invoke again on a new session.
	Reinitialize
	// Stop: the server is ending the session; make no further requests.
	Stop
	// GiveUp: the call's outcome cannot be learned; record it unknown.
	GiveUp
)

func (k ActionKind) String() string {
	switch k {
	case Reconnect:
		return "reconnect"
	case ReconnectAtHead:
		return "reconnect_at_head"
	case Reinitialize:
		return "reinitialize"
	case Stop:
		return "stop"
	case GiveUp:
		return "give_up"
	}
	return fmt.Sprintf("action(%d)", int(k))
}

// Action is the decision about one [Close].
type Action struct {
	Kind ActionKind
	// LastEventID is the id to resume after (Reconnect, ReconnectAtHead).
	LastEventID string
	// Gap is the range of events the server reported lost (ReconnectAtHead;
	// GiveUp with To "" when the server named no head).
	Gap *Gap
	// Reason says why the outcome is unknown (GiveUp).
	Reason string
}

// Gap is a range of event ids (From, To] the server reported it could not
// replay, with the reason it gave.
type Gap struct {
	From, To string
	Reason   string
}

// Classify applies the incident record's decision procedure to a close:
// transport errors and 5xx reconnect from the persisted event id (or give up
// when none was persisted), 404 reinitializes, 410 and a 409 naming a head id
// reconnect at the head behind a gap, a 409 or 410 without a head id gives
// up behind an open-ended gap, a close event stops, and anything else gives
// up.
func Classify(c Close) Action {
	switch {
	case c.CloseEvent:
		return Action{Kind: Stop}
	case c.Status == 0 || c.Status >= 500 && c.Status <= 599:
		return reconnectFrom(c)
	case c.Status == http.StatusNotFound:
		return Action{Kind: Reinitialize}
	case c.Status == http.StatusGone || c.Status == http.StatusConflict:
		return eventsLost(c)
	}
	return Action{Kind: GiveUp, Reason: fmt.Sprintf("unexpected %s; refusing to guess whether the call ran", c.Class())}
}

func reconnectFrom(c Close) Action {
	if c.LastEventID == "" {
		return Action{Kind: GiveUp, Reason: fmt.Sprintf("%s with no event id persisted: resumption impossible", c.Class())}
	}
	return Action{Kind: Reconnect, LastEventID: c.LastEventID}
}

// eventsLost handles 409 and 410, both "events lost" as the incident record
// reads them. With a head id the client reconnects there behind the gap.
// Without one it cannot reconnect safely, and the same cursor would meet
// the same answer: it gives up, surfacing an open-ended gap after its
// cursor.
func eventsLost(c Close) Action {
	head, reason := parseLost(c.Body)
	if reason == "" {
		reason = c.Class()
	}
	if head != "" {
		return Action{Kind: ReconnectAtHead, LastEventID: head, Gap: &Gap{From: c.LastEventID, To: head, Reason: reason}}
	}
	return Action{
		Kind:   GiveUp,
		Reason: fmt.Sprintf("events lost (%s) and no head_event_id given: cannot reconnect at head safely", c.Class()),
		Gap:    &Gap{From: c.LastEventID, Reason: reason},
	}
}

// parseLost reads where to reconnect from a 409/410 body, and its error;
// either is "" when absent or unreadable. The reference server's
// resume_event_id, the earliest cursor it can honour, is preferred to
// head_event_id: it loses only the evicted events, and still delivers a
// result written while the client was away, which resuming at the head
// skips when the result is the stream's newest event.
func parseLost(body []byte) (head, reason string) {
	var b struct {
		Error  string          `json:"error"`
		Head   json.RawMessage `json:"head_event_id"`
		Resume json.RawMessage `json:"resume_event_id"`
	}
	if json.Unmarshal(body, &b) != nil {
		return "", ""
	}
	for _, id := range []json.RawMessage{b.Resume, b.Head} {
		if s := string(id); len(id) > 0 && s != "null" && s != "0" && s != `""` {
			return mcp.IDString(id), b.Error
		}
	}
	return "", b.Error
}

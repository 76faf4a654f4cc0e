package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// eventWait bounds how long [Call.End] waits for the SDK to hand over the
// progress notifications that arrived on the wire before the call's answer
// (some SDKs dispatch notifications on another goroutine than responses).
const eventWait = 2 * time.Second

// Call is one tools/call of the workload, tracked from the invoke to its
// outcome.
type Call struct {
	t     *Tracker
	spec  workload.Call
	token string

	mu          sync.Mutex
	session     string
	requestID   string
	attempts    int  // tools/call POSTs the SDK sent for this call
	wrote       bool // a POST was written out completely
	status      int  // HTTP status of the last POST's answer, 0 if none
	answered    bool // the JSON-RPC response to the request was read
	answerError bool // ... and it was a JSON-RPC error
	resultID    int64
	lastEventID int64
	broken      bool
	brokeAt     time.Time
	lastFailure string // class of the last transport failure
	reconnects  int
	onWire      int // progress notifications read before the answer
	handled     int // progress notifications the SDK handed over
	changed     chan struct{}
	ended       bool
}

// Token is the progress token to send with the call.
func (c *Call) Token() string { return c.token }

// Sent reports whether the SDK sent the call's request at least once.
func (c *Call) Sent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attempts > 0
}

// Move puts a call the SDK has not sent yet on another session.
func (c *Call) Move(session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session = session
}

// Session is the session the call was made on.
func (c *Call) Session() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

func (c *Call) record(kind history.Kind) history.Record {
	return history.Record{
		Kind: kind, Call: c.spec.ID, Session: c.session, RequestID: c.requestID,
	}
}

// sending notes a tools/call POST going out with requestID, and records it
// as an invoke (attempt 1, or higher if the SDK sends the call again).
func (c *Call) sending(requestID string) {
	c.mu.Lock()
	c.attempts++
	c.requestID = requestID
	r := c.invoke()
	c.mu.Unlock()
	c.t.write(r)
}

// invoke renders the invoke record; c.mu must be held.
func (c *Call) invoke() history.Record {
	r := c.record(history.KindInvoke)
	r.OrderID, r.Tool, r.Attempt = c.spec.OrderID(), c.spec.Tool, max(c.attempts, 1)
	return r
}

func (c *Call) markWrote() {
	c.mu.Lock()
	c.wrote = true
	c.mu.Unlock()
}

// posted notes the answer to a POST: its status, or the transport error
// that ended it. An error after the request was written is a break.
func (c *Call) posted(status int, err error) {
	c.mu.Lock()
	c.status = status
	wrote := c.wrote
	c.mu.Unlock()
	if err != nil && wrote {
		c.broke(Classify(err), err)
	}
}

// broke records a stream_break, unless the call was answered or ended or
// the break was already recorded.
func (c *Call) broke(class string, err error) {
	c.mu.Lock()
	c.lastFailure = class
	if c.answered || c.ended || c.broken {
		c.mu.Unlock()
		return
	}
	c.broken, c.brokeAt = true, time.Now()
	r := c.record(history.KindStreamBreak)
	r.Reason, r.Detail = class, errText(err)
	c.mu.Unlock()
	c.t.write(r)
}

// reconnecting notes a GET with Last-Event-ID going out for the call.
func (c *Call) reconnecting(lastEventID string) (attempt int, last int64, delay time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reconnects++
	if c.broken {
		delay = time.Since(c.brokeAt)
	}
	return c.reconnects, ParseEventID(lastEventID), delay
}

// reconnected records the reconnect and, when the server answered 200, the
// resume.
func (c *Call) reconnected(attempt int, last int64, delay time.Duration, status int, err error) {
	c.mu.Lock()
	r := c.record(history.KindReconnect)
	r.Attempt, r.LastEventID, r.DelayUS = attempt, last, delay.Microseconds()
	switch {
	case err != nil:
		r.Result, r.Detail = "error", err.Error()
		c.lastFailure = Classify(err)
	case status != 200:
		r.Result = fmt.Sprintf("status_%d", status)
		c.lastFailure = r.Result
	default:
		r.Result, c.broken = "ok", false
	}
	resume := c.record(history.KindResume)
	resume.LastEventID = last
	c.mu.Unlock()
	c.t.write(r)
	if r.Result == "ok" {
		c.t.write(resume)
	}
}

// saw notes a message read on one of the call's own streams.
func (c *Call) saw(m mcp.Message, eventID int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if eventID > 0 {
		c.lastEventID = eventID
	}
	if m.IsResponse() && !c.answered && c.requestID != "" && m.IDString() == c.requestID {
		c.answered, c.answerError, c.resultID = true, m.Error != nil, eventID
	}
}

// Answered reports whether the server's JSON-RPC answer to the call was
// read off the wire.
func (c *Call) Answered() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.answered
}

func (c *Call) seenOnWire() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.answered {
		c.onWire++
	}
}

// event records a progress notification handed over by the SDK. It is
// counted as handled only once written, so that [Call.End], which waits for
// the count, writes the outcome after it.
func (c *Call) event(seq, eventID int64) {
	c.mu.Lock()
	r := c.record(history.KindEvent)
	c.mu.Unlock()
	r.EventID, r.Seq, r.Detail = eventID, seq, mcp.MethodProgress
	c.t.write(r)
	c.mu.Lock()
	c.handled++
	close(c.changed)
	c.changed = make(chan struct{})
	c.mu.Unlock()
}

// awaitEvents waits, for at most eventWait, until the SDK has handed over
// every progress notification read before the answer.
func (c *Call) awaitEvents() {
	deadline := time.NewTimer(eventWait)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		done, ch := c.handled >= c.onWire, c.changed
		c.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			return
		}
	}
}

// End records the call's outcome from what the SDK returned (isError is
// the result's isError; err the call's error) and what the wire showed:
//   - no error: ok, or fail with reason tool_error when isError;
//   - the server's JSON-RPC answer was read: fail (error_response, or
//     client_error when the SDK rejected a result it received);
//   - the request was never written out: fail, not_sent;
//   - the POST was answered with a non-2xx status: fail, status_NNN;
//   - otherwise the request reached the server and its fate is unknown:
//     unknown, with the class of the last transport failure as reason.
func (c *Call) End(isError bool, err error) {
	c.awaitEvents()
	c.mu.Lock()
	c.ended = true
	var invoke *history.Record
	if c.attempts == 0 {
		r := c.invoke()
		invoke = &r
	}
	out := c.outcome(isError, err)
	c.mu.Unlock()
	if invoke != nil {
		c.t.write(*invoke)
	}
	c.t.write(out)
}

// outcome renders the outcome record; c.mu must be held.
func (c *Call) outcome(isError bool, err error) history.Record {
	ok := c.record(history.KindOK)
	ok.OrderID = c.spec.OrderID()
	fail, unknown := ok, ok
	fail.Kind, unknown.Kind = history.KindFail, history.KindUnknown
	fail.Detail, unknown.Detail = errText(err), errText(err)
	switch {
	case err == nil && !isError:
		ok.EventID, ok.Result = c.resultID, history.ResultRead
		return ok
	case err == nil:
		fail.Reason, fail.EventID, fail.Result = "tool_error", c.resultID, history.ResultRead
	case c.answered && c.answerError:
		fail.Reason, fail.EventID, fail.Result = "error_response", c.resultID, history.ResultRead
	case c.answered:
		fail.Reason, fail.EventID, fail.Result = "client_error", c.resultID, history.ResultRead
	case !c.wrote:
		fail.Reason = "not_sent"
	case c.status != 0 && (c.status < 200 || c.status > 299):
		fail.Reason = fmt.Sprintf("status_%d", c.status)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		unknown.Reason = "cancelled"
		return unknown
	default:
		unknown.Reason = c.lastFailure
		if unknown.Reason == "" {
			unknown.Reason = Classify(err)
		}
		return unknown
	}
	return fail
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

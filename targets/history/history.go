// Package history is the client-side record of an experiment: what every
// client invoked, received and concluded, one JSON object per line in
// history.jsonl, timed on the run's base clock (see internal/runclock).
//
// The clients under test write it; the checker reads it. This file is the
// one place the format is defined.
//
// # Format
//
// Every line is a [Record]. Common fields: t_us (microseconds since the run's
// base), client (the logical client id, also sent as clientInfo.name in
// initialize), kind. Which other fields a kind fills:
//
//	client_start  target, detail ("fresh" or "restarted: resumed N calls")
//	client_stop   detail
//	session_new   session, protocol
//	session_lost  session, reason (status_404 | close_event | abandoned)
//	invoke        call, order_id, tool, session, request_id, attempt
//	ok            call, order_id, session, request_id, event_id (of the result, 0 if not evented), result
//	fail          call, order_id, session, request_id, event_id, reason, result
//	unknown       call, order_id, session, request_id, event_id, reason, result
//	event         call, session, request_id, event_id, seq (progress number), detail (method)
//	stream_break  call, session, request_id, reason (class: reset | eof | timeout | status_NNN | close_event | error), detail
//	reconnect     call, session, request_id, attempt, last_event_id, delay_us, result (ok | status_NNN | error), detail
//	resume        call, session, request_id, last_event_id
//	gap           call, session, request_id, from_event_id, to_event_id, reason
//
// An outcome read from the call's response (its result, or a JSON-RPC error
// answering it) carries result "read" and, when the response came as an
// SSE event, its event_id; a fail the client reached by cancelling the
// call (notifications/cancelled) carries result "cancelled"; an outcome
// the client reached by giving up otherwise (retries exhausted, session
// gone) carries neither. The checker counts a
// result as read only by an outcome that read it.
//
// A stream, from the client's side, is the pair (session, request_id): the
// response stream of one tools/call request, resumed by GET with
// Last-Event-ID. A gap (from, to] is a range of event ids the client knows it
// did not receive and has surfaced to its caller.
package history

// File is the history's name in the client agent's state folder.
const File = "history.jsonl"

// Kind names a history record.
type Kind string

// The record kinds.
const (
	KindClientStart Kind = "client_start"
	KindClientStop  Kind = "client_stop"
	KindSessionNew  Kind = "session_new"
	KindSessionLost Kind = "session_lost"
	KindInvoke      Kind = "invoke"
	KindOK          Kind = "ok"
	KindFail        Kind = "fail"
	KindUnknown     Kind = "unknown"
	KindEvent       Kind = "event"
	KindStreamBreak Kind = "stream_break"
	KindReconnect   Kind = "reconnect"
	KindResume      Kind = "resume"
	KindGap         Kind = "gap"
	// KindTask: the server answered the call with a task (2026-07-28 tasks
	// extension), Detail its id; the call's outcome is polled for.
	KindTask Kind = "task"
)

// ResultRead is the result field of an outcome read from the call's
// response.
const ResultRead = "read"

// ResultCancelled is the result field of a fail outcome the client reached
// by abandoning the call and telling the server so (notifications/cancelled):
// an answer that comes after it is not read.
const ResultCancelled = "cancelled"

// IsOutcome reports whether k ends a call (ok, fail or unknown).
func (k Kind) IsOutcome() bool { return k == KindOK || k == KindFail || k == KindUnknown }

// Record is one line of history.jsonl. Fields a kind does not use are left
// zero and omitted.
type Record struct {
	TUS         int64  `json:"t_us"`
	Client      string `json:"client"`
	Kind        Kind   `json:"kind"`
	Call        string `json:"call,omitempty"`
	OrderID     string `json:"order_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	Target      string `json:"target,omitempty"`
	Session     string `json:"session,omitempty"`
	Protocol    string `json:"protocol,omitempty"`
	RequestID   string `json:"request_id,omitempty"`
	Attempt     int    `json:"attempt,omitempty"`
	EventID     int64  `json:"event_id,omitempty"`
	Seq         int64  `json:"seq,omitempty"`
	LastEventID int64  `json:"last_event_id,omitempty"`
	FromEventID int64  `json:"from_event_id,omitempty"`
	// ToEventID ends a gap (from, to]; 0 is open-ended: the server said
	// events were lost but named no head, so everything after from is.
	ToEventID int64  `json:"to_event_id,omitempty"`
	DelayUS   int64  `json:"delay_us,omitempty"`
	Result    string `json:"result,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Detail    string `json:"detail,omitempty"`

	_ struct{} // keyed literals only: the record grows
}

package tools

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
)

// recordTimeout bounds one ledger write, so that a stalled ledger service
// cannot hold a tool, or a server winding down, forever.
const recordTimeout = 30 * time.Second

// Ledger writes a server's records. Every field is used as given: a host
// fills them all.
type Ledger struct {
	Recorder sideeffects.Recorder
	Source   string         // Record.Source of every record
	Clock    runclock.Clock // times every record
	Logger   *slog.Logger   // hears of every failed write
}

// Record stamps r with a fresh id, the clock's time and the source, and
// writes it. A failure is logged and returned.
func (l Ledger) Record(ctx context.Context, r sideeffects.Record) error {
	r.ID = sideeffects.NewID()
	r.TUS = l.Clock.Micros()
	r.Source = l.Source
	ctx, cancel := context.WithTimeout(ctx, recordTimeout)
	defer cancel()
	if err := l.Recorder.Record(ctx, r); err != nil {
		l.Logger.Warn("ledger record failed", "kind", r.Kind, "session", r.Session, "request", r.RequestID, "err", err)
		return fmt.Errorf("ledger %s: %w", r.Kind, err)
	}
	return nil
}

// Call is one tools/call as the ledger knows it: every record about the
// call carries these fields.
type Call struct {
	Tool      string // mcp.ToolCharge or mcp.ToolChatty
	OrderID   string // see [OrderID]
	Session   string // the Mcp-Session-Id
	Client    string // the session's clientInfo.name
	RequestID string // the JSON-RPC id, as mcp.IDString renders it
	Task      string // the task running the call (tasks extension), or ""
}

// record is a record about the call; a task's records name it as their
// stream, "task:<id>".
func (c Call) record(kind sideeffects.Kind) sideeffects.Record {
	r := sideeffects.Record{Kind: kind, Tool: c.Tool, OrderID: c.OrderID, Session: c.Session,
		Client: c.Client, RequestID: c.RequestID}
	if c.Task != "" {
		r.Stream = "task:" + c.Task
	}
	return r
}

// Started is the call's call_started record.
func (c Call) Started() sideeffects.Record { return c.record(sideeffects.KindCallStarted) }

// Finished is the call's call_finished record: is_error, reason ("ok" when
// the outcome has none) and detail from o.
func (c Call) Finished(o Outcome) sideeffects.Record {
	r := c.record(sideeffects.KindCallFinished)
	r.IsError, r.Reason, r.Detail = o.IsError, o.Reason, o.Detail
	if r.Reason == "" {
		r.Reason = reasonOK
	}
	return r
}

// ResultWritten records that the call's result is about to be written to
// stream as event eventID ("" and 0 where the host cannot see them, and
// event id 0 for a plain JSON answer).
func (c Call) ResultWritten(stream string, eventID int64, isError bool) sideeffects.Record {
	r := c.record(sideeffects.KindResultWritten)
	r.Stream, r.EventID, r.IsError = stream, eventID, isError
	return r
}

// ResultDropped records that the call's result went nowhere, and why.
func (c Call) ResultDropped(isError bool, reason string) sideeffects.Record {
	r := c.record(sideeffects.KindResultDropped)
	r.IsError, r.Reason = isError, reason
	return r
}

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The call_finished reasons and error names the core gives.
const (
	reasonOK               = "ok"
	reasonInvalidArguments = "invalid_arguments"
	reasonLedgerFailed     = "ledger_failed"
	reasonStoreFailed      = "store_failed"
	reasonEmitFailed       = "emit_failed"
	reasonSessionGone      = "session_gone"
	reasonCancelled        = "cancelled"
)

// What a tool does when its request is cancelled while it runs
// (Config.OnCancel).
const (
	// OnCancelStop stops before the side effect: no charge, no result.
	OnCancelStop = "stop"
	// OnCancelIgnore finishes as if nothing happened: the charge is made at
	// its time and a result is produced, for the host to drop.
	OnCancelIgnore = "ignore"
	// OnCancelCommitThenNotice is the realistic race: the tool was at its
	// commit when the cancellation came, so the charge is made at once and
	// only then is the cancellation noticed: no result.
	OnCancelCommitThenNotice = "commit_then_notice"
)

// OnCancelModes lists the on_cancel values, the default first.
var OnCancelModes = []string{OnCancelStop, OnCancelIgnore, OnCancelCommitThenNotice}

// ErrSessionGone is wrapped by an [Emit] error when the call's session has
// ended, so no later notification can go anywhere.
var ErrSessionGone = errors.New("session gone")

// Emit sends progress notification seq of total on the call's stream. It
// calls recordEmitted once, before the notification can reach a client,
// with the stream and the event id it was given ("" and 0 where the host
// cannot see them), unless the notification never got that far.
type Emit func(seq, total int, recordEmitted func(stream string, eventID int64)) error

// Config configures [NewRunner].
type Config struct {
	Ledger Ledger
	Keys   Keys // nil = NewMemoryKeys()
	// DefaultChargeDuration is how long a charge runs when the call gives
	// no duration_ms.
	DefaultChargeDuration time.Duration
	// OnCancel is one of [OnCancelModes]; "" is OnCancelStop.
	OnCancel string
}

// Runner runs the tools. It is safe for concurrent use.
type Runner struct {
	ledger   Ledger
	keys     Keys
	charge   time.Duration
	onCancel string
}

// NewRunner returns a runner recording to cfg.Ledger. An OnCancel that is
// not one of [OnCancelModes] is OnCancelStop; hosts validate it first.
func NewRunner(cfg Config) *Runner {
	if cfg.Keys == nil {
		cfg.Keys = NewMemoryKeys()
	}
	if !slices.Contains(OnCancelModes, cfg.OnCancel) {
		cfg.OnCancel = OnCancelStop
	}
	return &Runner{ledger: cfg.Ledger, keys: cfg.Keys, charge: cfg.DefaultChargeDuration, onCancel: cfg.OnCancel}
}

// Outcome is what a tool run produced.
type Outcome struct {
	Structured  any    // the structured result, also its text content
	IsError     bool   // the result is a tool error
	Reason      string // call_finished reason; "" is ok
	Detail      string // call_finished detail: a host's note
	Interrupted bool   // ctx ended first: there is no result
	// Cancelled: the request was cancelled and the tool noticed (stop,
	// commit_then_notice): there is no result. Reason is "cancelled".
	Cancelled bool
}

// Failure is the error outcome named reason: structured content
// {"error":reason,"message":err} (no message when err is nil).
func Failure(reason string, err error) Outcome {
	sc := map[string]string{"error": reason}
	if err != nil {
		sc["message"] = err.Error()
	}
	return Outcome{Structured: sc, IsError: true, Reason: reason}
}

// JSON is the structured result as JSON.
func (o Outcome) JSON() (json.RawMessage, error) {
	sc, err := json.Marshal(o.Structured)
	if err != nil {
		return nil, fmt.Errorf("tool result: %w", err)
	}
	return sc, nil
}

// Result is the outcome as a tools/call result, with the structured
// content repeated as text, as the specification recommends.
func (o Outcome) Result() (mcp.CallResult, error) {
	sc, err := o.JSON()
	if err != nil {
		return mcp.CallResult{}, err
	}
	return mcp.CallResult{
		Content:           []mcp.Content{{Type: "text", Text: string(sc)}},
		StructuredContent: sc,
		IsError:           o.IsError,
	}, nil
}

// Run records call_started and runs c's tool with args until it ends or
// ctx does (see the package doc for what ctx must be). emit is used by
// chatty and may be nil for charge.
func (r *Runner) Run(ctx context.Context, c Call, args json.RawMessage, emit Emit) Outcome {
	return r.RunRequest(ctx, nil, c, args, emit)
}

// RunRequest is Run for a request that can be cancelled apart from ctx:
// cancelled closes when the host sees the request cancelled (at 2026-07-28,
// its response stream closing). The runner records call_cancelled at that
// moment, then does what Config.OnCancel says. A nil cancelled never fires.
func (r *Runner) RunRequest(ctx context.Context, cancelled <-chan struct{}, c Call, args json.RawMessage, emit Emit) Outcome {
	if !Known(c.Tool) {
		return Failure(reasonInvalidArguments, fmt.Errorf("unknown tool %q", c.Tool))
	}
	_ = r.record(ctx, c.Started())
	w := &waiter{ctx: ctx, cancelled: cancelled, mode: r.onCancel, onCancel: func() {
		rec := c.record(sideeffects.KindCallCancelled)
		rec.Reason = r.onCancel
		_ = r.record(ctx, rec)
	}}
	if c.Tool == mcp.ToolCharge {
		return r.runCharge(w, c, args)
	}
	return r.runChatty(w, c, args, emit)
}

// waiter sleeps a tool's waits, watching its request's cancellation.
type waiter struct {
	ctx       context.Context
	cancelled <-chan struct{}
	mode      string // Config.OnCancel
	onCancel  func() // records the cancellation, once
	seen      bool
}

var (
	errInterrupted = errors.New("interrupted")
	errCancelled   = errors.New("request cancelled")
)

// sleep waits d. It returns errInterrupted when ctx ends first. The first
// time it sees the request cancelled it records so and, unless the mode is
// ignore (which sleeps on to the end of d), returns errCancelled.
func (w *waiter) sleep(d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		// An ended ctx wins over a timer that has already fired: a select
		// between the two would pick at random, and let an interrupted tool
		// commit.
		if w.ctx.Err() != nil {
			return errInterrupted
		}
		cancelled := w.cancelled
		if w.seen {
			cancelled = nil
		}
		if cancelled == nil {
			if runclock.Sleep(w.ctx, time.Until(deadline)) != nil {
				return errInterrupted
			}
			return nil
		}
		// A cancellation already seen wins over a timer that has already
		// fired, for the same reason: a tool cancelled after its third
		// event must not emit a fourth because its next one was due.
		select {
		case <-cancelled:
			if err := w.cancel(); err != nil {
				return err
			}
			continue
		default:
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-t.C:
			return nil
		case <-w.ctx.Done():
			t.Stop()
			return errInterrupted
		case <-cancelled:
			t.Stop()
			if err := w.cancel(); err != nil {
				return err
			}
		}
	}
}

// cancel records the request's cancellation, seen for the first time; it
// returns errCancelled unless the mode is ignore.
func (w *waiter) cancel() error {
	w.seen = true
	w.onCancel()
	if w.mode != OnCancelIgnore {
		return errCancelled
	}
	return nil
}

// cancelledOutcome is the outcome of a tool that noticed its cancellation.
func cancelledOutcome(structured any) Outcome {
	return Outcome{Structured: structured, Reason: reasonCancelled, Cancelled: true}
}

// record writes rec whether or not ctx has ended.
func (r *Runner) record(ctx context.Context, rec sideeffects.Record) error {
	return r.ledger.Record(context.WithoutCancel(ctx), rec)
}

type chargeResult struct {
	Charged      bool   `json:"charged"`
	OrderID      string `json:"order_id"`
	AmountCents  int64  `json:"amount_cents"`
	Deduplicated bool   `json:"deduplicated,omitempty"`
}

// runCharge waits out the call's duration, then records exactly one
// charge, or a deduplicated one when its idempotency key was charged
// before. Cancelled during the wait, it stops (stop), charges at once and
// then stops (commit_then_notice), or carries on (ignore).
func (r *Runner) runCharge(w *waiter, c Call, raw json.RawMessage) Outcome {
	a, err := DecodeCharge(raw)
	if err != nil {
		return Failure(reasonInvalidArguments, err)
	}
	d := r.charge
	if a.DurationMS > 0 {
		d = millis(a.DurationMS)
	}
	switch err := w.sleep(d); {
	case errors.Is(err, errInterrupted):
		return Outcome{Interrupted: true}
	case errors.Is(err, errCancelled) && w.mode == OnCancelStop:
		return cancelledOutcome(nil)
	case errors.Is(err, errCancelled): // commit_then_notice
		out := r.commitCharge(w.ctx, c, a)
		if out.IsError {
			return out
		}
		return cancelledOutcome(out.Structured)
	}
	return r.commitCharge(w.ctx, c, a)
}

// commitCharge records the charge (or its deduplication).
func (r *Runner) commitCharge(ctx context.Context, c Call, a mcp.ChargeArgs) Outcome {
	rec := c.record(sideeffects.KindCharge)
	rec.OrderID, rec.AmountCents, rec.IdempotencyKey = a.OrderID, a.AmountCents, a.IdempotencyKey
	result := chargeResult{Charged: true, OrderID: a.OrderID, AmountCents: a.AmountCents}
	reserved := false
	if a.IdempotencyKey != "" {
		fresh, err := r.keys.ReserveKey(a.IdempotencyKey)
		if err != nil {
			return Failure(reasonStoreFailed, err)
		}
		if !fresh {
			rec.Kind, result.Deduplicated = sideeffects.KindChargeDeduplicated, true
		}
		reserved = fresh
	}
	if err := r.record(ctx, rec); err != nil {
		if reserved {
			if rerr := r.keys.ReleaseKey(a.IdempotencyKey); rerr != nil {
				r.ledger.Logger.Warn("releasing an idempotency key", "key", a.IdempotencyKey, "err", rerr)
			}
		}
		return Failure(reasonLedgerFailed, err)
	}
	return Outcome{Structured: result}
}

type chattyResult struct {
	Emitted int `json:"emitted"`
}

// runChatty emits the call's numbered progress notifications through emit.
// It has no side effect to commit: cancelled, it stops unless the mode is
// ignore.
func (r *Runner) runChatty(w *waiter, c Call, raw json.RawMessage, emit Emit) Outcome {
	a, err := DecodeChatty(raw)
	if err != nil {
		return Failure(reasonInvalidArguments, err)
	}
	// Event i is due at start + i*interval: pacing by the schedule, not by
	// sleeping after each emission, keeps the tool's duration what the call
	// asked for however long the ledger takes to acknowledge an event.
	interval := millis(a.IntervalMS)
	start := time.Now()
	for seq := 1; seq <= a.Events; seq++ {
		switch err := w.sleep(time.Until(start.Add(time.Duration(seq) * interval))); {
		case errors.Is(err, errInterrupted):
			return Outcome{Interrupted: true}
		case errors.Is(err, errCancelled):
			return cancelledOutcome(chattyResult{Emitted: seq - 1})
		}
		err := emit(seq, a.Events, func(stream string, eventID int64) {
			rec := c.record(sideeffects.KindEventEmitted)
			rec.Stream, rec.EventID, rec.Seq = stream, eventID, int64(seq)
			_ = r.record(w.ctx, rec)
		})
		switch {
		case errors.Is(err, ErrSessionGone):
			return Outcome{Structured: chattyResult{Emitted: seq - 1}, Reason: reasonSessionGone}
		case err != nil:
			return Failure(reasonEmitFailed, err)
		}
	}
	return Outcome{Structured: chattyResult{Emitted: a.Events}}
}

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// The call_finished reasons and error names the core gives.
const (
	reasonOK               = "ok"
	reasonInvalidArguments = "invalid_arguments"
	reasonLedgerFailed     = "ledger_failed"
	reasonStoreFailed      = "store_failed"
	reasonEmitFailed       = "emit_failed"
	reasonSessionGone      = "session_gone"
)

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
}

// Runner runs the tools. It is safe for concurrent use.
type Runner struct {
	ledger Ledger
	keys   Keys
	charge time.Duration
}

// NewRunner returns a runner recording to cfg.Ledger.
func NewRunner(cfg Config) *Runner {
	if cfg.Keys == nil {
		cfg.Keys = NewMemoryKeys()
	}
	return &Runner{ledger: cfg.Ledger, keys: cfg.Keys, charge: cfg.DefaultChargeDuration}
}

// Outcome is what a tool run produced.
type Outcome struct {
	Structured  any    // the structured result, also its text content
	IsError     bool   // the result is a tool error
	Reason      string // call_finished reason; "" is ok
	Detail      string // call_finished detail: a host's note
	Interrupted bool   // ctx ended first: there is no result
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
func (o Outcome) Result() (mcpwire.CallResult, error) {
	sc, err := o.JSON()
	if err != nil {
		return mcpwire.CallResult{}, err
	}
	return mcpwire.CallResult{
		Content:           []mcpwire.Content{{Type: "text", Text: string(sc)}},
		StructuredContent: sc,
		IsError:           o.IsError,
	}, nil
}

// Run records call_started and runs c's tool with args until it ends or
// ctx does (see the package doc for what ctx must be). emit is used by
// chatty and may be nil for charge.
func (r *Runner) Run(ctx context.Context, c Call, args json.RawMessage, emit Emit) Outcome {
	if !Known(c.Tool) {
		return Failure(reasonInvalidArguments, fmt.Errorf("unknown tool %q", c.Tool))
	}
	_ = r.record(ctx, c.Started())
	if c.Tool == mcpwire.ToolCharge {
		return r.runCharge(ctx, c, args)
	}
	return r.runChatty(ctx, c, args, emit)
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
// before.
func (r *Runner) runCharge(ctx context.Context, c Call, raw json.RawMessage) Outcome {
	a, err := DecodeCharge(raw)
	if err != nil {
		return Failure(reasonInvalidArguments, err)
	}
	d := r.charge
	if a.DurationMS > 0 {
		d = millis(a.DurationMS)
	}
	if runclock.Sleep(ctx, d) != nil {
		return Outcome{Interrupted: true}
	}
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
func (r *Runner) runChatty(ctx context.Context, c Call, raw json.RawMessage, emit Emit) Outcome {
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
		if runclock.Sleep(ctx, time.Until(start.Add(time.Duration(seq)*interval))) != nil {
			return Outcome{Interrupted: true}
		}
		err := emit(seq, a.Events, func(stream string, eventID int64) {
			rec := c.record(sideeffects.KindEventEmitted)
			rec.Stream, rec.EventID, rec.Seq = stream, eventID, int64(seq)
			_ = r.record(ctx, rec)
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

package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/server/store"
)

// maxChattyEvents bounds one chatty call.
const maxChattyEvents = 1_000_000

// toolList is the tools/list result.
var toolList = json.RawMessage(`{"tools":[
{"name":"charge","description":"Charges an order once, after running for duration_ms. Not idempotent unless idempotency_key is given.",
 "inputSchema":{"type":"object","properties":{
  "order_id":{"type":"string","minLength":1},
  "amount_cents":{"type":"integer","minimum":1},
  "idempotency_key":{"type":"string"},
  "duration_ms":{"type":"integer","minimum":0,"description":"0 or absent: the server's default"}},
 "required":["order_id","amount_cents"]}},
{"name":"chatty","description":"Emits events numbered progress notifications, one every interval_ms, then returns how many it emitted.",
 "inputSchema":{"type":"object","properties":{
  "events":{"type":"integer","minimum":0,"maximum":1000000},
  "interval_ms":{"type":"integer","minimum":0}},
 "required":["events"]}}]}`)

func knownTool(name string) bool { return name == mcpwire.ToolCharge || name == mcpwire.ToolChatty }

// outcome is what a tool run produced.
type outcome struct {
	structured  any
	isError     bool
	reason      string // call_finished reason; "" is ok
	interrupted bool   // the context ended first: no result
}

func toolError(reason string, err error) outcome {
	return outcome{structured: map[string]string{"error": reason, "message": err.Error()}, isError: true, reason: reason}
}

// message renders the outcome as a tools/call result, with the structured
// content repeated as text, as the specification recommends.
func (o outcome) message(id json.RawMessage) mcpwire.Message {
	sc, err := json.Marshal(o.structured)
	if err != nil {
		return mcpwire.NewError(id, mcpwire.CodeInternalError, err.Error())
	}
	msg, err := mcpwire.NewResult(id, mcpwire.CallResult{
		Content:           []mcpwire.Content{{Type: "text", Text: string(sc)}},
		StructuredContent: sc,
		IsError:           o.isError,
	})
	if err != nil {
		return mcpwire.NewError(id, mcpwire.CodeInternalError, err.Error())
	}
	return msg
}

type chargeResult struct {
	Charged      bool   `json:"charged"`
	OrderID      string `json:"order_id"`
	AmountCents  int64  `json:"amount_cents"`
	Deduplicated bool   `json:"deduplicated,omitempty"`
}

// charge runs for its duration, then records exactly one charge (or a
// deduplicated one when its idempotency key was charged before).
func (s *Server) charge(ctx context.Context, c *call) outcome {
	var a mcpwire.ChargeArgs
	if err := decodeArgs(c.args, &a); err != nil {
		return toolError("invalid_arguments", err)
	}
	switch {
	case a.OrderID == "":
		return toolError("invalid_arguments", errors.New("order_id is required"))
	case a.AmountCents <= 0:
		return toolError("invalid_arguments", errors.New("amount_cents must be positive"))
	case a.DurationMS < 0:
		return toolError("invalid_arguments", errors.New("duration_ms must not be negative"))
	}
	d := s.cfg.DefaultChargeDuration
	if a.DurationMS > 0 {
		d = time.Duration(a.DurationMS) * time.Millisecond
	}
	if !sleep(ctx, d) {
		return outcome{interrupted: true}
	}
	rec := sideeffects.Record{Kind: sideeffects.KindCharge, Tool: mcpwire.ToolCharge, OrderID: a.OrderID,
		AmountCents: a.AmountCents, IdempotencyKey: a.IdempotencyKey, Session: c.sess.id,
		Client: c.sess.client, RequestID: c.key}
	result := chargeResult{Charged: true, OrderID: a.OrderID, AmountCents: a.AmountCents}
	if a.IdempotencyKey != "" {
		fresh, err := s.store.ReserveKey(a.IdempotencyKey)
		if err != nil {
			return toolError("store_failed", err)
		}
		if !fresh {
			rec.Kind, result.Deduplicated = sideeffects.KindChargeDeduplicated, true
		}
	}
	if err := s.record(rec); err != nil {
		if a.IdempotencyKey != "" && !result.Deduplicated {
			if rerr := s.store.ReleaseKey(a.IdempotencyKey); rerr != nil {
				s.log.Warn("releasing an idempotency key", "key", a.IdempotencyKey, "err", rerr)
			}
		}
		return toolError("ledger_failed", err)
	}
	return outcome{structured: result}
}

// chatty emits numbered progress notifications on the call's stream (the
// standalone stream when the call is answered as JSON, which cannot carry
// them), recording each in the ledger before it is written to the log.
func (s *Server) chatty(ctx context.Context, c *call) outcome {
	var a mcpwire.ChattyArgs
	if err := decodeArgs(c.args, &a); err != nil {
		return toolError("invalid_arguments", err)
	}
	if a.Events < 0 || a.Events > maxChattyEvents || a.IntervalMS < 0 {
		return toolError("invalid_arguments", fmt.Errorf("need 0 <= events <= %d and interval_ms >= 0", maxChattyEvents))
	}
	token := c.token
	if len(token) == 0 || string(token) == "null" {
		token = c.id // no progressToken: the request id stands in for it
	}
	target := c.stream
	if c.kind == store.KindJSON {
		target = store.Standalone
	}
	// Event i is due at start + i*interval: pacing by the schedule, not by
	// sleeping after each emission, keeps the tool's duration what the call
	// asked for however long the ledger takes to acknowledge an event.
	interval := time.Duration(a.IntervalMS) * time.Millisecond
	start := time.Now()
	for i := 1; i <= a.Events; i++ {
		if !sleep(ctx, time.Until(start.Add(time.Duration(i)*interval))) {
			return outcome{interrupted: true}
		}
		if err := s.emitProgress(c, target, token, i, a.Events); err != nil {
			if errors.Is(err, store.ErrSessionClosed) {
				return outcome{structured: map[string]int{"emitted": i - 1}, reason: "session_gone"}
			}
			return toolError("store_failed", err)
		}
	}
	return outcome{structured: map[string]int{"emitted": a.Events}}
}

func (s *Server) emitProgress(c *call, target store.StreamID, token json.RawMessage, seq, total int) error {
	note, err := mcpwire.NewNotification(mcpwire.MethodProgress, mcpwire.ProgressParams{
		ProgressToken: token, Progress: float64(seq), Total: float64(total)})
	if err != nil {
		return err
	}
	data, err := json.Marshal(note)
	if err != nil {
		return err
	}
	_, err = c.sess.log.Append(target, data, "", func(id int64) {
		s.record(sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: c.sess.id, Client: c.sess.client,
			RequestID: c.key, Tool: c.tool, Stream: target.String(), EventID: id, Seq: int64(seq)})
	})
	return err
}

// decodeArgs decodes tool arguments, which must be a JSON object.
func decodeArgs(raw json.RawMessage, v any) error {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return errors.New("arguments must be an object")
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("arguments: %w", err)
	}
	return nil
}

// sleep waits d, reporting false if ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

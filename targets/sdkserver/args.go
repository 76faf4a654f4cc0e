package sdkserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// Bounds on tool arguments, so that a tool loop always ends.
const (
	MaxChattyEvents   = 100_000
	MaxChattyInterval = time.Minute
	MaxChargeDuration = time.Hour
)

// ErrInvalidArgs is wrapped by every argument error of a tool.
var ErrInvalidArgs = errors.New("invalid arguments")

// ChargeSchema and ChattySchema are the tools' input schemas, as both SDKs
// advertise them. They are permissive about extra properties, like the
// reference server.
var (
	ChargeSchema = json.RawMessage(`{"type":"object","properties":{` +
		`"order_id":{"type":"string"},"amount_cents":{"type":"integer"},` +
		`"idempotency_key":{"type":"string"},"duration_ms":{"type":"integer"}},` +
		`"required":["order_id","amount_cents"]}`)
	ChattySchema = json.RawMessage(`{"type":"object","properties":{` +
		`"events":{"type":"integer"},"interval_ms":{"type":"integer"}},` +
		`"required":["events"]}`)
)

// ParseCharge decodes and checks the arguments of the charge tool.
func ParseCharge(raw json.RawMessage) (mcpwire.ChargeArgs, error) {
	var a mcpwire.ChargeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	switch {
	case a.OrderID == "":
		return a, fmt.Errorf("%w: order_id is required", ErrInvalidArgs)
	case a.AmountCents <= 0:
		return a, fmt.Errorf("%w: amount_cents must be positive", ErrInvalidArgs)
	case a.DurationMS < 0 || time.Duration(a.DurationMS)*time.Millisecond > MaxChargeDuration:
		return a, fmt.Errorf("%w: duration_ms must be within [0, %d]", ErrInvalidArgs, MaxChargeDuration.Milliseconds())
	}
	return a, nil
}

// ParseChatty decodes and checks the arguments of the chatty tool.
func ParseChatty(raw json.RawMessage) (mcpwire.ChattyArgs, error) {
	var a mcpwire.ChattyArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	switch {
	case a.Events < 0 || a.Events > MaxChattyEvents:
		return a, fmt.Errorf("%w: events must be within [0, %d]", ErrInvalidArgs, MaxChattyEvents)
	case a.IntervalMS < 0 || time.Duration(a.IntervalMS)*time.Millisecond > MaxChattyInterval:
		return a, fmt.Errorf("%w: interval_ms must be within [0, %d]", ErrInvalidArgs, MaxChattyInterval.Milliseconds())
	}
	return a, nil
}

func decodeArgs(raw json.RawMessage, into any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{}`)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgs, err)
	}
	return nil
}

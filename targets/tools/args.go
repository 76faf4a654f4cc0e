package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Bounds on tool arguments, so that a tool always ends and every duration
// stays far inside time.Duration. MaxChattyEvents is also the most an
// experiment file may ask for.
const (
	MaxChattyEvents = 1_000_000
	MaxDuration     = 24 * time.Hour
)

// ErrInvalidArgs is wrapped by every argument error of a tool.
var ErrInvalidArgs = errors.New("invalid arguments")

// Definition is how a server lists a tool in tools/list.
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// maxMS is MaxDuration in the milliseconds the arguments are given in.
var maxMS = MaxDuration.Milliseconds()

var definitions = []Definition{
	{
		Name:        mcp.ToolCharge,
		Description: "Charges an order once, after running for duration_ms. Not idempotent unless idempotency_key is given.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"order_id":{"type":"string","minLength":1},`+
			`"amount_cents":{"type":"integer","minimum":1},`+
			`"idempotency_key":{"type":"string"},`+
			`"duration_ms":{"type":"integer","minimum":0,"maximum":%d,"description":"0 or absent: the server's default"}},`+
			`"required":["order_id","amount_cents"]}`, maxMS)),
	},
	{
		Name:        mcp.ToolChatty,
		Description: "Emits events numbered progress notifications, one every interval_ms, then returns how many it emitted.",
		InputSchema: json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{`+
			`"events":{"type":"integer","minimum":0,"maximum":%d},`+
			`"interval_ms":{"type":"integer","minimum":0,"maximum":%d}},`+
			`"required":["events"]}`, MaxChattyEvents, maxMS)),
	},
}

// Definitions lists charge and chatty, in that order. The schemas are
// permissive about extra properties, like the tools.
func Definitions() []Definition {
	out := make([]Definition, len(definitions))
	copy(out, definitions)
	return out
}

// Known reports whether name is one of the tools.
func Known(name string) bool { return name == mcp.ToolCharge || name == mcp.ToolChatty }

// DecodeCharge decodes and checks the arguments of the charge tool.
func DecodeCharge(raw json.RawMessage) (mcp.ChargeArgs, error) {
	var a mcp.ChargeArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	switch {
	case a.OrderID == "":
		return a, fmt.Errorf("%w: order_id is required", ErrInvalidArgs)
	case a.AmountCents <= 0:
		return a, fmt.Errorf("%w: amount_cents must be positive", ErrInvalidArgs)
	case a.DurationMS < 0 || a.DurationMS > maxMS:
		return a, fmt.Errorf("%w: duration_ms must be within [0, %d]", ErrInvalidArgs, maxMS)
	}
	return a, nil
}

// DecodeChatty decodes and checks the arguments of the chatty tool.
func DecodeChatty(raw json.RawMessage) (mcp.ChattyArgs, error) {
	var a mcp.ChattyArgs
	if err := decodeArgs(raw, &a); err != nil {
		return a, err
	}
	switch {
	case a.Events < 0 || a.Events > MaxChattyEvents:
		return a, fmt.Errorf("%w: events must be within [0, %d]", ErrInvalidArgs, MaxChattyEvents)
	case a.IntervalMS < 0 || a.IntervalMS > maxMS:
		return a, fmt.Errorf("%w: interval_ms must be within [0, %d]", ErrInvalidArgs, maxMS)
	}
	return a, nil
}

// OrderID is the order_id member of a tool's arguments, or "" when they
// hold none. It is read leniently, before the arguments are checked, so
// that the records of a call with bad arguments still name its order.
func OrderID(raw json.RawMessage) string {
	var a struct {
		OrderID string `json:"order_id"`
	}
	if json.Unmarshal(raw, &a) != nil {
		return ""
	}
	return a.OrderID
}

// decodeArgs decodes tool arguments, which must be a JSON object.
func decodeArgs(raw json.RawMessage, into any) error {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return fmt.Errorf("%w: arguments must be an object", ErrInvalidArgs)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidArgs, err)
	}
	return nil
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

package tools

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

func TestArguments(t *testing.T) {
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{"charge", `{"order_id":"o","amount_cents":1}`, true},
		{"charge", `{"order_id":"o","amount_cents":1,"extra":true}`, true},
		{"charge", ` {"order_id":"o","amount_cents":1,"duration_ms":86400000}`, true},
		{"charge", `{"amount_cents":1}`, false},
		{"charge", `{"order_id":"o","amount_cents":-1}`, false},
		{"charge", `{"order_id":"o","amount_cents":"5"}`, false},
		{"charge", `{"order_id":"o","amount_cents":1,"duration_ms":-1}`, false},
		{"charge", `{"order_id":"o","amount_cents":1,"duration_ms":86400001}`, false},
		{"charge", `{"order_id":"o","amount_cents":1,"duration_ms":99999999999}`, false},
		{"charge", `[]`, false},
		{"chatty", `{}`, true},
		{"chatty", `{"events":3,"interval_ms":5}`, true},
		{"chatty", `{"events":1000000}`, true},
		{"chatty", `{"events":1000001}`, false},
		{"chatty", `{"events":-1}`, false},
		{"chatty", `{"events":1,"interval_ms":-5}`, false},
		{"chatty", `{"events":1,"interval_ms":86400001}`, false},
		{"chatty", `{"events":1.5}`, false},
		{"chatty", ``, false},
		{"chatty", `null`, false},
	}
	for _, tc := range tests {
		var err error
		if tc.tool == "charge" {
			_, err = DecodeCharge(json.RawMessage(tc.args))
		} else {
			_, err = DecodeChatty(json.RawMessage(tc.args))
		}
		if tc.ok {
			assert.NoError(t, err, tc.args)
		} else {
			assert.ErrorIs(t, err, ErrInvalidArgs, tc.args)
		}
	}
}

func TestOrderIDIsReadLeniently(t *testing.T) {
	assert.Equal(t, "o-1", OrderID(json.RawMessage(`{"order_id":"o-1","amount_cents":"not a number"}`)))
	assert.Empty(t, OrderID(json.RawMessage(`{"order_id":7}`)))
	assert.Empty(t, OrderID(nil))
}

// TestDefinitionsAdvertiseTheBounds keeps the schemas every server lists
// in step with what the tools accept.
func TestDefinitionsAdvertiseTheBounds(t *testing.T) {
	defs := Definitions()
	require.Len(t, defs, 2)
	assert.Equal(t, mcp.ToolCharge, defs[0].Name)
	assert.Equal(t, mcp.ToolChatty, defs[1].Name)
	var schemas [2]struct {
		Type       string `json:"type"`
		Properties map[string]struct {
			Minimum *int64 `json:"minimum"`
			Maximum *int64 `json:"maximum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	for i, d := range defs {
		require.NoError(t, json.Unmarshal(d.InputSchema, &schemas[i]), d.Name)
		assert.Equal(t, "object", schemas[i].Type)
		assert.True(t, Known(d.Name))
	}
	assert.Equal(t, []string{"order_id", "amount_cents"}, schemas[0].Required)
	assert.Equal(t, MaxDuration.Milliseconds(), *schemas[0].Properties["duration_ms"].Maximum)
	assert.EqualValues(t, MaxChattyEvents, *schemas[1].Properties["events"].Maximum)
	assert.Equal(t, MaxDuration.Milliseconds(), *schemas[1].Properties["interval_ms"].Maximum)
	assert.False(t, Known("refund"))

	defs[0].Name = "changed"
	assert.Equal(t, mcp.ToolCharge, Definitions()[0].Name, "callers get a copy")
}

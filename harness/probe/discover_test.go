package probe

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tool(name string, schema map[string]any) *mcp.Tool {
	return &mcp.Tool{Name: name, InputSchema: schema}
}

func TestChooseToolsFromToolsList(t *testing.T) {
	order := tool("place_order", map[string]any{"type": "object", "required": []any{"order_id", "amount_cents"},
		"properties": map[string]any{"order_id": map[string]any{"type": "string"}, "amount_cents": map[string]any{"type": "integer"}}})
	rows := tool("export_rows", map[string]any{"type": "object", "required": []any{"rows"},
		"properties": map[string]any{"rows": map[string]any{"type": "integer"}}})
	var s Server
	require.NoError(t, choose(&s, []*mcp.Tool{order, rows}))
	assert.Equal(t, "export_rows", s.Stream.Tool)
	assert.Equal(t, 300, s.Stream.Args["rows"])
	assert.Equal(t, "place_order", s.Effect.Tool)
	assert.Equal(t, map[string]any{"order_id": "probe-{{call}}", "amount_cents": 1}, s.Effect.Args)
	assert.Contains(t, s.Chosen, "tools chosen from tools/list (place_order, export_rows)")

	err := choose(&s, []*mcp.Tool{order})
	require.ErrorIs(t, err, ErrInput, "no tool streams a count of things: the user must name one")
	assert.Contains(t, err.Error(), "--tool")
}

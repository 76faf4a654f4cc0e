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

func TestNextAskRepeatsNearTheBoundThenMovesOut(t *testing.T) {
	requested := map[int64]int{}
	var asks []int64
	for range 9 {
		a, ok := nextAsk(51, 100, requested)
		require.True(t, ok)
		requested[a]++
		asks = append(asks, a)
	}
	assert.Equal(t, []int64{51, 51, 51, 52, 52, 52, 50, 50, 50}, asks, "an ask that missed one too few or too many is worth another run")
	_, ok := nextAsk(1, 1, map[int64]int{1: maxAsks})
	assert.False(t, ok, "nothing left to ask")
	a, ok := nextAsk(100, 100, map[int64]int{100: maxAsks})
	require.True(t, ok)
	assert.Equal(t, int64(99), a, "never above the most events a call can leave")
}

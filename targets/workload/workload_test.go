package workload

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArguments(t *testing.T) {
	tests := []struct {
		name string
		call Call
		want string
		err  string
	}{
		{"charge gets order id and duration",
			Call{ID: "c1-1", Tool: "charge", Args: map[string]any{"amount_cents": 4999}, Duration: 4500 * time.Millisecond},
			`{"amount_cents":4999,"order_id":"c1-1","duration_ms":4500}`, ""},
		{"explicit order id wins",
			Call{ID: "c1-1", Tool: "charge", Args: map[string]any{"amount_cents": 1, "order_id": "o-9"}},
			`{"amount_cents":1,"order_id":"o-9"}`, ""},
		{"chatty spreads events over its duration",
			Call{ID: "c1-2", Tool: "chatty", Args: map[string]any{"events": 500}, Duration: 15 * time.Second},
			`{"events":500,"interval_ms":30}`, ""},
		{"chatty without events", Call{ID: "x", Tool: "chatty"}, "", "needs args.events"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.call.Arguments()
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.JSONEq(t, tc.want, string(got))
		})
	}
}

func TestIdempotent(t *testing.T) {
	assert.False(t, Call{Tool: "charge"}.IsIdempotent())
	assert.True(t, Call{Tool: "charge", Args: map[string]any{"idempotency_key": "k"}}.IsIdempotent())
	assert.True(t, Call{Tool: "chatty"}.IsIdempotent())
}

func TestTemplateRoundTrip(t *testing.T) {
	tmpl := Template{Clients: 3, Calls: []Call{{Tool: "charge", Args: map[string]any{"amount_cents": 4999}, Duration: 1500 * time.Millisecond, Key: "order_id"}}}
	b, err := json.Marshal(tmpl)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"tool":"charge"`)
	var back Template
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, tmpl.Clients, back.Clients)
	assert.Equal(t, tmpl.Calls[0].Duration, back.Calls[0].Duration, "as the client agent reads it from its configuration")
	assert.Equal(t, "order_id", back.Calls[0].Key)
}

func TestTemplateExpandsNamedClientsAndCalls(t *testing.T) {
	tmpl := Template{Clients: 2, Calls: []Call{
		{Tool: "charge", Args: map[string]any{"amount_cents": 1}, Duration: time.Second},
		{Tool: "chatty", Args: map[string]any{"events": 3}},
	}}
	p := tmpl.Expand()
	require.Len(t, p.Clients, 2)
	assert.Equal(t, "c2", p.Clients[1].ID)
	assert.Equal(t, []string{"c2-1", "c2-2"}, []string{p.Clients[1].Calls[0].ID, p.Clients[1].Calls[1].ID})
	assert.Equal(t, "c1-1", p.Clients[0].Calls[0].OrderID(), "each client charges its own orders")
	p.Clients[0].Calls[0].Args["amount_cents"] = 9
	assert.Equal(t, 1, p.Clients[1].Calls[0].Args["amount_cents"], "clients do not share argument maps")
}

func TestArgumentsFillPlaceholders(t *testing.T) {
	c := Call{ID: "c3-2", Tool: "book", Args: map[string]any{
		"trip":  "trip-{{call}}",
		"who":   map[string]any{"name": "{{client}}", "seats": []any{"{{call}}", 2}},
		"count": 4,
	}}
	b, err := c.Arguments()
	require.NoError(t, err)
	assert.JSONEq(t, `{"trip":"trip-c3-2","who":{"name":"c3","seats":["c3-2",2]},"count":4}`, string(b))
	assert.Equal(t, "{{call}}", c.Args["trip"].(string)[5:], "the template is left as written")

	charge := Call{ID: "c1-1", Tool: "charge", Args: map[string]any{"order_id": "order-{{call}}", "amount_cents": 5}}
	assert.Equal(t, "order-c1-1", charge.OrderID())
}

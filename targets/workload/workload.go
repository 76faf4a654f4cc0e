// Package workload describes what the clients of an experiment do, in the
// form every client target (naive, resumable, the SDK adapters) accepts:
// logical clients, each making its calls in order.
//
// The runner hands the client agent a [Template] in its configuration; the
// agent expands it into a [Plan], and client targets receive one [Client]
// and the shared [Options].
package workload

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Call is one tools/call a client makes. Duration is already scaled: it is
// how long the tool runs on the server.
type Call struct {
	ID       string         `json:"id"`
	Tool     string         `json:"tool"`
	Args     map[string]any `json:"args,omitempty"`
	Duration time.Duration  `json:"duration"`
	// Key is the argument path (dot-separated) that tells one logical
	// operation of the tool from another; empty: the whole arguments (for
	// charge, its order_id).
	Key string `json:"key,omitempty"`
	// Idempotent says whether invoking the call again is harmless; nil
	// leaves it to the tool (see [Call.IsIdempotent]).
	Idempotent *bool `json:"idempotent,omitempty"`
}

// OrderID is the call's order id: args.order_id (its placeholders filled
// in) if set, otherwise the call id. A retry of the same logical call keeps its order id, which is how the
// ledger sees a duplicate charge.
func (c Call) OrderID() string {
	if v, ok := c.Args["order_id"].(string); ok && v != "" {
		return c.fill(v).(string)
	}
	return c.ID
}

// IsIdempotent reports whether repeating the call is harmless: as the call
// says when it says, else chatty is, charge is when it carries an
// idempotency key, and any other tool is not.
func (c Call) IsIdempotent() bool {
	if c.Idempotent != nil {
		return *c.Idempotent
	}
	switch c.Tool {
	case mcp.ToolChatty:
		return true
	case mcp.ToolCharge:
	default:
		return false
	}
	k, _ := c.Args["idempotency_key"].(string)
	return k != ""
}

// Arguments renders the tool arguments sent on the wire: for charge the
// order id and the duration, for chatty the interval between events.
func (c Call) Arguments() (json.RawMessage, error) {
	args := map[string]any{}
	for k, v := range c.Args {
		args[k] = c.fill(v)
	}
	switch c.Tool {
	case mcp.ToolCharge:
		args["order_id"] = c.OrderID()
		if c.Duration > 0 {
			args["duration_ms"] = c.Duration.Milliseconds()
		}
	case mcp.ToolChatty:
		n, err := events(args["events"])
		if err != nil {
			return nil, fmt.Errorf("call %s: %w", c.ID, err)
		}
		if _, set := args["interval_ms"]; !set && n > 0 {
			args["interval_ms"] = c.Duration.Milliseconds() / int64(n)
		}
	}
	return json.Marshal(args)
}

// Placeholders a call's string arguments may hold, filled in per call so
// that every logical operation carries a value of its own and a retry of it
// is recognisable on the wire.
const (
	PlaceholderCall   = "{{call}}"   // the call's id, such as c3-2
	PlaceholderClient = "{{client}}" // the logical client's id, such as c3
)

// Placeholders lists every placeholder.
var Placeholders = []string{PlaceholderCall, PlaceholderClient}

// fill replaces the placeholders in the strings of an argument value,
// however deep.
func (c Call) fill(v any) any {
	switch x := v.(type) {
	case string:
		return strings.NewReplacer(PlaceholderCall, c.ID, PlaceholderClient, c.clientID()).Replace(x)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = c.fill(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = c.fill(e)
		}
		return out
	}
	return v
}

// clientID is the logical client's id: the call id up to its last dash
// ([Template.Expand] names calls <client>-<n>).
func (c Call) clientID() string {
	if i := strings.LastIndexByte(c.ID, '-'); i > 0 {
		return c.ID[:i]
	}
	return c.ID
}

func events(v any) (int, error) {
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		return int(n), nil
	case nil:
		return 0, fmt.Errorf("chatty needs args.events")
	}
	return 0, fmt.Errorf("chatty args.events must be a number, not %T", v)
}

// Client is one logical client: its id (sent as clientInfo.name, the key the
// ledger groups sessions by) and its calls, made one after another.
type Client struct {
	ID    string `json:"id"`
	Calls []Call `json:"calls"`
}

// Template is a workload in which every logical client makes the same
// calls, the form the runner hands to the client agent: its size does not
// grow with the number of clients. Client i (from 1) is named c<i> and its
// j-th call c<i>-<j>; the calls' own IDs are ignored.
type Template struct {
	Clients int    `json:"clients"`
	Calls   []Call `json:"calls"`
}

// Expand names every client and call.
func (t Template) Expand() Plan {
	var p Plan
	for i := range t.Clients {
		c := Client{ID: fmt.Sprintf("c%d", i+1)}
		for j, call := range t.Calls {
			call.ID = fmt.Sprintf("%s-%d", c.ID, j+1)
			call.Args = maps.Clone(call.Args)
			c.Calls = append(c.Calls, call)
		}
		p.Clients = append(p.Clients, c)
	}
	return p
}

// Plan is every logical client of one client agent.
type Plan struct {
	Clients []Client `json:"clients"`
}

// Backoff bounds reconnection: the first delay, the cap, and how many
// attempts before giving up. Delays are already scaled.
type Backoff struct {
	Initial time.Duration `json:"initial"`
	Max     time.Duration `json:"max"`
	Retries int           `json:"retries"`
}

// Options are what every client target shares within one client agent.
type Options struct {
	Endpoint string // the MCP endpoint URL, through the proxy
	Protocol string // protocol version to ask for in initialize
	// Tasks is "extension" for a 2026-07-28 client that declares the
	// io.modelcontextprotocol/tasks extension and polls the tasks it is
	// given; "" or "off" declares nothing.
	Tasks  string
	Cursor string // "memory" or "file"
	// CursorDir holds one cursor file per logical client when Cursor is "file".
	CursorDir string
	Backoff   Backoff
	// ReadTimeout, if positive, treats a stream silent for that long as
	// broken (a client-side idle timeout). Zero waits forever.
	ReadTimeout time.Duration
	Seed        int64
	Clock       runclock.Clock
	History     *history.Writer
	Logger      *slog.Logger
}

// Settings are a client target's own options as its agent receives them:
// Apply sets what they say in the Options every client of the agent
// shares.
type Settings interface {
	Apply(*Options)
}

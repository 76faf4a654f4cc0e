package check

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// SourceWire is the Source of the ledger records the checker derives from
// the wire's server edge, and of the accounts read from them.
const SourceWire = "wire"

// Op says how the checker tells one logical operation of a tool from
// another on the wire, and whether repeating it is harmless. An experiment's
// workload names its tools' ops; a tool the workload does not name is taken
// as [DefaultOps] says.
type Op struct {
	Tool string `json:"tool"`
	// Key is the argument path that names the operation, dot-separated
	// ("order_id", "order.id"); empty means the whole arguments: two calls
	// are the same operation when their arguments are.
	Key string `json:"key,omitempty"`
	// Idempotent says that invoking the operation again cannot repeat its
	// side effect.
	Idempotent bool `json:"idempotent,omitempty"`
}

// DefaultOps are the built-in tools' ops: a charge is the operation of its
// order_id, and is idempotent only when it carries an idempotency_key (see
// [Ops.Idempotent]); chatty only emits events.
var DefaultOps = []Op{
	{Tool: mcpwire.ToolCharge, Key: "order_id"},
	{Tool: mcpwire.ToolChatty, Idempotent: true},
}

// Ops is the op of every tool a run's workload calls.
type Ops []Op

func (o Ops) find(tool string) (Op, bool) {
	for _, list := range []Ops{o, DefaultOps} {
		for _, op := range list {
			if op.Tool == tool {
				return op, true
			}
		}
	}
	return Op{}, false
}

// Key names the operation a tools/call of tool with args invokes: the value
// at the op's key path, or, when the op has no key, the tool has no op, the
// path holds nothing or the arguments are unknown, the digest of the
// arguments as the wire observer recorded it.
func (o Ops) Key(tool string, args json.RawMessage, digest string) string {
	if op, ok := o.find(tool); ok && op.Key != "" {
		if v, ok := lookup(args, op.Key); ok {
			return v
		}
	}
	if digest != "" {
		return tool + "#" + digest
	}
	return tool
}

// Idempotent reports whether invoking tool with args again is harmless: the
// op says so, or it is a charge with an idempotency key.
func (o Ops) Idempotent(tool string, args json.RawMessage) bool {
	op, ok := o.find(tool)
	if !ok {
		return false
	}
	if op.Tool == mcpwire.ToolCharge && !op.Idempotent {
		k, ok := lookup(args, "idempotency_key")
		return ok && k != ""
	}
	return op.Idempotent
}

// lookup reads the value at a dotted path of a JSON object as text: a
// string's contents, or any other JSON value as written.
func lookup(args json.RawMessage, path string) (string, bool) {
	cur := args
	for _, part := range strings.Split(path, ".") {
		var obj map[string]json.RawMessage
		if json.Unmarshal(cur, &obj) != nil {
			return "", false
		}
		v, ok := obj[part]
		if !ok {
			return "", false
		}
		cur = v
	}
	cur = bytes.TrimSpace(cur)
	if len(cur) == 0 || bytes.Equal(cur, []byte("null")) {
		return "", false
	}
	if cur[0] == '"' {
		var s string
		if json.Unmarshal(cur, &s) != nil {
			return "", false
		}
		return s, true
	}
	return string(cur), true
}

package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
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
var DefaultOps = Ops{
	{Tool: mcp.ToolCharge, Key: "order_id"},
	{Tool: mcp.ToolChatty, Idempotent: true},
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
	k, _ := o.keyOf(tool, args, digest)
	return k
}

// keyOf is [Ops.Key], and whether the key tells the operation apart from
// another: it does when it is the value at the op's key path; the digest
// of the arguments does not, as two calls of a tool with the same
// arguments may be two operations as well as one retried.
func (o Ops) keyOf(tool string, args json.RawMessage, digest string) (string, bool) {
	if op, ok := o.find(tool); ok && op.Key != "" {
		if v, ok := lookup(args, op.Key); ok {
			return v, true
		}
	}
	if digest != "" {
		return tool + "#" + digest, false
	}
	return tool, false
}

// Idempotent reports whether invoking tool with args again is harmless: the
// op says so, or it is a charge with an idempotency key.
func (o Ops) Idempotent(tool string, args json.RawMessage) bool {
	op, ok := o.find(tool)
	if !ok {
		return false
	}
	if op.Tool == mcp.ToolCharge && !op.Idempotent {
		k, ok := lookup(args, "idempotency_key")
		return ok && k != ""
	}
	return op.Idempotent
}

// WorkloadFile is the workload an experiment's clients were handed, as JSON
// (a workload.Template), in its result folder: the checker reads the ops of
// its calls from it.
const WorkloadFile = "workload.json"

// OpsOf returns the ops a workload's calls state: each call's key and
// idempotence, with the built-in tools' defaults where a call states none.
// The first call of a tool decides for it.
func OpsOf(t workload.Template) Ops {
	var out Ops
	seen := map[string]bool{}
	for _, c := range t.Calls {
		if seen[c.Tool] {
			continue
		}
		seen[c.Tool] = true
		op, known := DefaultOps.find(c.Tool)
		if !known {
			op = Op{Tool: c.Tool}
		}
		if c.Key != "" {
			op.Key = c.Key
		}
		if c.Idempotent != nil {
			op.Idempotent = *c.Idempotent
		}
		out = append(out, op)
	}
	return out
}

// loadOps reads the ops of workload.json; an absent file is nil ops (the
// defaults).
func loadOps(path string) (Ops, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var t workload.Template
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return OpsOf(t), nil
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

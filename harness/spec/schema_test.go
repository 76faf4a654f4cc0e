package spec_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaosrun/chaosrun/harness/matrix"
	"github.com/chaosrun/chaosrun/harness/spec"
)

var update = flag.Bool("update", false, "rewrite docs/experiment.schema.json from the generator")

const (
	schemaFile  = "../../docs/experiment.schema.json"
	experiments = "../../experiments"
)

func TestSchemaFileIsTheGeneratorsOutput(t *testing.T) {
	want, err := spec.Schema()
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(schemaFile, want, 0o644))
	}
	got, err := os.ReadFile(schemaFile)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got),
		"docs/experiment.schema.json is not what the loader's types say: go run ./cmd/chaosrun schema > docs/experiment.schema.json")
}

// compiled is the generated schema, compiled by a validator of draft-07
// (which checks it against the draft's own metaschema first).
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := spec.Schema()
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("experiment.schema.json", doc); err != nil {
		return nil, err
	}
	return c.Compile("experiment.schema.json")
})

// schemaCheck validates a YAML document against the schema, as an editor
// with the YAML language server does.
func schemaCheck(t *testing.T, doc *yaml.Node) error {
	t.Helper()
	sch, err := compiled()
	require.NoError(t, err)
	v, err := jsonValue(doc)
	require.NoError(t, err)
	b, err := json.Marshal(v)
	require.NoError(t, err)
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return sch.Validate(inst)
}

// jsonValue is the JSON value of a YAML node as the YAML language server
// reads it (YAML 1.2): mappings as objects, sequences as arrays, scalars
// by their resolved tag, and a date such as 2025-11-25 as the text it is
// (yaml.v3 would make it a time in an interface).
func jsonValue(n *yaml.Node) (any, error) {
	switch n.Kind {
	case yaml.DocumentNode:
		return jsonValue(n.Content[0])
	case yaml.AliasNode:
		return jsonValue(n.Alias)
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			v, err := jsonValue(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			m[n.Content[i].Value] = v
		}
		return m, nil
	case yaml.SequenceNode:
		s := []any{}
		for _, item := range n.Content {
			v, err := jsonValue(item)
			if err != nil {
				return nil, err
			}
			s = append(s, v)
		}
		return s, nil
	}
	if n.ShortTag() == "!!timestamp" {
		return n.Value, nil
	}
	var v any
	return v, n.Decode(&v)
}

func parseYAML(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal([]byte(src), &doc))
	return &doc
}

// TestEveryExperimentFileMeetsTheSchemaAndLoads: every experiment file of
// the library, in every folder, loads and meets the schema. The matrix
// files (experiments/matrix) are another format, which chaosrun matrix
// reads and composes experiments from: they are left out, after checking
// that they are matrices.
func TestEveryExperimentFileMeetsTheSchemaAndLoads(t *testing.T) {
	var files, matrices []string
	require.NoError(t, filepath.WalkDir(experiments, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !slices.Contains([]string{".yaml", ".yml"}, filepath.Ext(path)) {
			return err
		}
		if filepath.Base(filepath.Dir(path)) == "matrix" {
			matrices = append(matrices, path)
		} else {
			files = append(files, path)
		}
		return nil
	}))
	require.Greater(t, len(files), 50, "the library's experiment files, in all folders")
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, experiments+"/"), func(t *testing.T) {
			src, err := os.ReadFile(f)
			require.NoError(t, err)
			_, err = spec.Parse(f, src)
			require.NoError(t, err, "the loader")
			assert.NoError(t, schemaCheck(t, parseYAML(t, string(src))), "the schema")
		})
	}
	require.NotEmpty(t, matrices)
	for _, m := range matrices {
		_, err := matrix.Load(m)
		assert.NoError(t, err, "%s is a matrix file", m)
	}
}

// base is a valid experiment that the mutations below change in one place.
const base = `name: base
description: A charge cut by an idle timeout, then its server crashed.
seed: 7
time_scale: 0.05
server:
  target: reference
  retention_events: 100
client:
  target: resumable
  cursor: file
  backoff: {initial: 1s, max: 30s, retries: 8}
workload:
  clients: 2
  calls:
    - {tool: charge, args: {amount_cents: 4999}, duration: 90s}
faults:
  - kind: idle_timeout
    at: 0s
    params: {idle: 60s, close: reset}
  - kind: crash
    when: {event: tools_call, tool: charge, after: 30s}
    params: {role: server}
    repeat: {every: 10s, count: 2}
expect:
  verdict: fail
  violations: [no_duplicate_side_effects]
  figures: {duplicates: ">=1", forks: 0}
`

// mutate replaces the one occurrence of old in base by new.
func mutate(t *testing.T, old, new string) string {
	t.Helper()
	require.Equal(t, 1, strings.Count(base, old), "%q occurs once in the base", old)
	return strings.Replace(base, old, new, 1)
}

// TestLoaderAndSchemaAgreeOnMutations: a valid file changed in one place
// is refused by both the loader and the schema, at the same field (or
// the schema at one of its parents), or accepted by both.
func TestLoaderAndSchemaAgreeOnMutations(t *testing.T) {
	refused := []struct {
		name, old, new string
		field          string // where the loader says the problem is
	}{
		{"unknown top-level field", "seed: 7\n", "seed: 7\ncolour: blue\n", "colour"},
		{"unknown field in a fault's params", "{idle: 60s, close: reset}", "{idle: 60s, close: reset, idel: 5s}", "faults[0].params.idel"},
		{"a param of another kind", "{idle: 60s, close: reset}", "{idle: 60s, close: reset, mode: refuse}", "faults[0].params.mode"},
		{"a param of the wrong type", "{idle: 60s, close: reset}", "{idle: 60, close: reset}", "faults[0].params"},
		{"a param out of its values", "close: reset}", "close: rst}", "faults[0].params.close"},
		{"a zero duration where it must be positive", "{idle: 60s,", "{idle: 0s,", "faults[0].params.idle"},
		{"a required param left out", "params: {idle: 60s, close: reset}", "params: {close: reset}", "faults[0].params.idle"},
		{"a fault without its params", "    params: {idle: 60s, close: reset}\n", "", "faults[0].params.idle"},
		{"a role no process has", "{role: server}", "{role: proxy}", "faults[1].params.role"},
		{"an unknown fault kind", "kind: idle_timeout", "kind: idle_timout", "faults[0].kind"},
		{"a fault without a kind", "  - kind: crash\n    when", "  - when", "faults[1].kind"},
		{"unknown field in a fault", "    at: 0s\n", "    at: 0s\n    every: 1s\n", "faults[0].every"},
		{"a repeat without its count", "{every: 10s, count: 2}", "{every: 10s}", "faults[1].repeat.count"},
		{"an unknown trigger event", "event: tools_call", "event: tool_call", "faults[1].when.event"},
		{"a negative nth", "after: 30s}", "after: 30s, nth: -1}", "faults[1].when.nth"},
		{"a wrong type", "clients: 2", "clients: two", "workload.clients"},
		{"a list where a mapping goes", "  clients: 2\n  calls:", "  clients: 2\n  calls: {tool: charge}\n  unused:", "workload.calls"},
		{"too many clients", "clients: 2", "clients: 100001", "workload.clients"},
		{"a bad duration", "duration: 90s", "duration: ninety", "workload.calls[0].duration"},
		{"a built-in tool without its duration", ", duration: 90s}", "}", "workload.calls[0].duration"},
		{"an unknown argument of charge", "{amount_cents: 4999}", "{amount_cents: 4999, colour: blue}", "workload.calls[0].args.colour"},
		{"a charge of nothing", "{amount_cents: 4999}", "{amount_cents: 0}", "workload.calls[0].args.amount_cents"},
		{"an unknown target option", "  retention_events: 100\n", "  retention_events: 100\n  retention: 5\n", "server.retention"},
		{"another target's option", "  target: resumable\n", "  target: go-sdk\n", "client.cursor"},
		{"an option of the wrong type", "retention_events: 100", "retention_events: [100]", "server.retention_events[0]"},
		{"an option out of its values", "cursor: file", "cursor: disk", "client.cursor"},
		{"the naive client's file cursor", "  target: resumable\n  cursor: file\n  backoff: {initial: 1s, max: 30s, retries: 8}",
			"  target: naive\n  cursor: file", "client.cursor"},
		{"a nested option unknown", "{initial: 1s, max: 30s, retries: 8}", "{initial: 1s, max: 30s, retries: 8, jitter: 1s}", "client.backoff.jitter"},
		{"a nested option out of bounds", "retries: 8}", "retries: 1001}", "client.backoff.retries"},
		{"an unknown server target", "target: reference", "target: referense", "server.target"},
		{"tasks on a server that runs none", "  target: reference\n", "  target: go-sdk\n  tasks: off\n", "server.tasks"},
		{"an unknown protocol", "  target: resumable\n", "  target: resumable\n  protocol: 2024-01-01\n", "client.protocol"},
		{"a protocol told to a program", "  target: resumable\n  cursor: file\n  backoff: {initial: 1s, max: 30s, retries: 8}",
			"  target: command\n  command: [./client]\n  protocol: 2025-11-25", "client.protocol"},
		{"a bad name", "name: base", "name: Base", "name"},
		{"no description", "description: A charge cut by an idle timeout, then its server crashed.\n", "", "description"},
		{"a time scale of zero", "time_scale: 0.05", "time_scale: 0", "time_scale"},
		{"an unknown verdict", "verdict: fail", "verdict: failed", "expect.verdict"},
		{"an unknown invariant", "violations: [no_duplicate_side_effects]", "violations: [no_duplicates]", "expect.violations[0]"},
		{"an unknown figure", "forks: 0}", "fork: 0}", "expect.figures.fork"},
		{"a malformed bound", `">=1"`, `">= one"`, "expect.figures.duplicates"},
		{"no expectation", "expect:\n  verdict: fail\n  violations: [no_duplicate_side_effects]\n  figures: {duplicates: \">=1\", forks: 0}\n", "", "expect"},
		{"a balancer without its kind", "seed: 7\n", "seed: 7\nbalancer: {balance: source}\n", "balancer.kind"},
		{"a balancer setting of another kind", "seed: 7\n", "seed: 7\nbalancer: {kind: nginx, timeout_server: 1m}\n", "balancer.timeout_server"},
		{"a balancer timeout of zero", "seed: 7\n", "seed: 7\nbalancer: {kind: haproxy, timeout_server: 0s}\n", "balancer.timeout_server"},
		{"too many replicas", "  retention_events: 100\n", "  retention_events: 100\n  replicas: 10\n", "server.replicas"},
	}
	for _, tc := range refused {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			src := mutate(t, tc.old, tc.new)
			_, err := spec.Parse("x.yaml", []byte(src))
			var se *spec.Error
			require.ErrorAs(t, err, &se, "the loader refuses it")
			var fields []string
			for _, p := range se.Problems {
				fields = append(fields, p.Field)
			}
			assert.Contains(t, fields, tc.field, "the loader names the field")
			serr := schemaCheck(t, parseYAML(t, src))
			require.Error(t, serr, "the schema refuses it")
			assert.True(t, refusedAt(serr, tc.field), "the schema refuses it at %s or above: %v", tc.field, serr)
		})
	}

	accepted := []struct{ name, old, new string }{
		{"the base itself", "seed: 7", "seed: 7"},
		{"a duration written as the integer 0", "at: 0s", "at: 0"},
		{"other duration forms", "{idle: 60s,", "{idle: 1h2m3.5s,"},
		{"a bound as a bare integer", `">=1"`, "1"},
		{"a setting several targets take", "  target: reference\n", "  target: go-sdk\n"},
		{"the default target, named by leaving it out", "  target: reference\n", ""},
		{"a client that shares the options type", "  target: resumable\n  cursor: file", "  target: naive\n  cursor: memory"},
		{"an SDK client's retries", "  target: resumable\n  cursor: file\n  backoff: {initial: 1s, max: 30s, retries: 8}",
			"  target: go-sdk\n  backoff: {retries: 3}"},
		{"a program of the user's as the server", "  target: reference\n  retention_events: 100\n", "  target: command\n  command: [./shop, --addr, \"{addr}\"]\n"},
		{"tasks where the server runs them", "  retention_events: 100\n", "  retention_events: 100\n  tasks: legacy\n"},
		{"a session fault with no params", "  - kind: crash\n    when: {event: tools_call, tool: charge, after: 30s}\n    params: {role: server}\n",
			"  - kind: expire_session\n    when: {event: tools_call, tool: charge, after: 30s}\n"},
		{"a balancer in front of replicas", "seed: 7\n", "seed: 7\nbalancer: {kind: nginx, proxy_read_timeout: 60s, proxy_buffering: false}\n"},
		{"a call of the user's tool with any arguments", "  target: reference\n  retention_events: 100\n",
			"  target: command\n  command: [./shop]\n"},
		{"the latest protocol", "  target: resumable\n", "  target: resumable\n  protocol: 2025-11-25\n"},
	}
	for _, tc := range accepted {
		t.Run("accepted/"+tc.name, func(t *testing.T) {
			src := mutate(t, tc.old, tc.new)
			_, err := spec.Parse("x.yaml", []byte(src))
			require.NoError(t, err, "the loader accepts it")
			assert.NoError(t, schemaCheck(t, parseYAML(t, src)), "the schema accepts it")
		})
	}
}

// refusedAt says whether a schema refusal concerns field (a loader's field
// path, "faults[0].params.idle"): one of its leaves is at the field, at one
// of its parents, or below it.
func refusedAt(err error, field string) bool {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return false
	}
	want := strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(field), ".")
	for _, at := range leaves(ve) {
		n := min(len(at), len(want))
		if slices.Equal(at[:n], want[:n]) {
			return true
		}
	}
	return false
}

// leaves are the instance locations of the innermost errors, with the
// key an unknown or a missing property error names.
func leaves(ve *jsonschema.ValidationError) [][]string {
	if len(ve.Causes) > 0 {
		var out [][]string
		for _, c := range ve.Causes {
			out = append(out, leaves(c)...)
		}
		return out
	}
	var keys []string
	switch k := ve.ErrorKind.(type) {
	case *kind.AdditionalProperties:
		keys = k.Properties
	case *kind.Required:
		keys = k.Missing
	}
	if len(keys) == 0 {
		return [][]string{ve.InstanceLocation}
	}
	var out [][]string
	for _, key := range keys {
		out = append(out, append(slices.Clone(ve.InstanceLocation), key))
	}
	return out
}

// site is a mapping of a valid experiment whose fields the overlay test
// changes one at a time: the loader's path of it, and the definition of
// its schema ("" for the schema found by following the path).
type site struct {
	doc, at, def string
	// own are the fields whose rules the site answers for, when not all
	// of its schema's: a block's own keys (its targets' settings are the
	// target sites').
	own []string
	// refusedBetweenFields are values of a list that the loader refuses
	// at this site for a rule between fields ("tasks=extension" at
	// 2025-11-25), with the rule; the schema states some such rules
	// (a target's own settings), not all.
	refusedBetweenFields map[string]string
}

// docWith is a valid experiment with the blocks given, the base's workload
// and expectation, and a reset fault unless faults are given.
func docWith(blocks string) string {
	if !strings.Contains(blocks, "faults:") {
		blocks += "faults: [{kind: reset}]\n"
	}
	return "name: site\ndescription: Every field of one block, changed one at a time.\ntime_scale: 0.05\n" + blocks +
		"workload:\n  clients: 1\n  calls: [{tool: charge, args: {amount_cents: 1}, duration: 90s}]\nexpect:\n  verdict: fail\n"
}

// faultDoc is a valid experiment whose first fault is of kind with params,
// in a topology every role of a process fault can act on.
func faultDoc(kind, params string) string {
	return docWith("server: {event_store: redis, tasks: legacy}\nbalancer: {kind: nginx}\nfaults: [{kind: " + kind + ", params: " + params + "}]\n")
}

var overlaySites = []site{
	{doc: docWith(""), at: ""},
	{doc: docWith("server: {target: reference, replicas: 1, tasks: off}\nbalancer: {kind: nginx}\n"), at: "server",
		own: []string{"target", "replicas", "tasks"},
		refusedBetweenFields: map[string]string{
			"tasks=extension": "the tasks extension is a 2026-07-28 one, and client.protocol is 2025-11-25",
			"target=go-sdk":   "only the reference and mcp-go servers run tasks, and server.tasks is written",
			"target=command":  "as go-sdk; and a command server needs its command",
			"target=image":    "as go-sdk; and an image server needs its image",
		}},
	{doc: docWith("client: {target: resumable, protocol: 2025-11-25, tasks: off}\n"), at: "client",
		own: []string{"target", "protocol", "tasks"},
		refusedBetweenFields: map[string]string{
			"tasks=extension": "the tasks extension is a 2026-07-28 one",
			"target=command":  "a program of the user's is told no protocol, and needs its command",
		}},
	{doc: docWith("server: {target: reference, retention_events: 100, retention_age: 0s, on_unresumable: gone, event_store: memory, " +
		"session_ttl: 10m, keepalive: 0s, retry: 0s, on_cancel: stop, task_store: memory, task_ttl: 1h, task_poll_interval: 5s, tasks: legacy}\n"),
		at: "server", def: "server.reference",
		refusedBetweenFields: map[string]string{"tasks=extension": "the tasks extension is a 2026-07-28 one"}},
	{doc: docWith("server: {target: go-sdk, retention_events: 100, session_ttl: 10m}\n"), at: "server", def: "server.go-sdk"},
	{doc: docWith("server: {target: mcp-go, retention_events: 100, session_ttl: 10m, tasks: legacy}\n"), at: "server", def: "server.mcp-go"},
	{doc: docWith("server: {target: command, command: [./shop], listen: \"127.0.0.1:9000\"}\n"), at: "server", def: "server.command"},
	{doc: docWith("server: {target: image, image: shop:1}\n"), at: "server", def: "server.image"},
	{doc: docWith("client: {target: naive, cursor: memory, backoff: {initial: 1s, max: 30s, retries: 8}, read_timeout: 0s, protocol: 2025-11-25, tasks: off}\n"),
		at: "client", def: "client.naive"},
	{doc: docWith("client: {target: resumable, cursor: file, backoff: {initial: 1s, max: 30s, retries: 8}, read_timeout: 0s, protocol: 2025-11-25, tasks: off}\n"),
		at: "client", def: "client.resumable",
		refusedBetweenFields: map[string]string{"tasks=extension": "the tasks extension is a 2026-07-28 one"}},
	{doc: docWith("client: {target: resumable, backoff: {initial: 1s, max: 30s, retries: 8}}\n"), at: "client.backoff"},
	{doc: docWith("client: {target: go-sdk, backoff: {retries: 8}, protocol: 2025-11-25, tasks: off}\n"), at: "client", def: "client.go-sdk"},
	{doc: docWith("client: {target: go-sdk, backoff: {retries: 8}}\n"), at: "client.backoff"},
	{doc: docWith("client: {target: mcp-go, backoff: {retries: 8}, protocol: 2025-11-25, tasks: off}\n"), at: "client", def: "client.mcp-go"},
	{doc: docWith("client: {target: command, command: [./client], tasks: off}\n"), at: "client", def: "client.command"},
	{doc: docWith("balancer: {kind: nginx, balance: roundrobin, proxy_read_timeout: 60s, proxy_buffering: true, keepalive_timeout: 75s}\n"),
		at: "balancer", refusedBetweenFields: map[string]string{"kind=haproxy": "the nginx settings are not HAProxy's",
			"kind=service": "a service has no nginx settings"}},
	{doc: docWith("balancer: {kind: haproxy, timeout_server: 1m, timeout_client: 1m, timeout_tunnel: 1h}\n"),
		at: "balancer", refusedBetweenFields: map[string]string{"kind=nginx": "the HAProxy settings are not nginx's",
			"kind=service": "a service has no HAProxy settings"}},
	{doc: docWith("balancer: {kind: service, balance: source}\n"),
		at: "balancer", refusedBetweenFields: map[string]string{"balance=header Mcp-Session-Id": "a service sees connections, not headers"}},
	{doc: docWith(""), at: "workload"},
	{doc: docWith(""), at: "workload.calls[0]"},
	{doc: strings.Replace(docWith(""), "duration: 90s}", "duration: 90s, idempotent: false}", 1), at: "workload.calls[0]"},
	{doc: docWith(""), at: "expect"},
	{doc: docWith("faults: [{kind: reset, at: 0s, when: {event: request, nth: 1, edge: server}, repeat: {every: 10s, count: 2, jitter: 0s}}]\n"),
		at: "faults[0]", refusedBetweenFields: kindsWithParams()},
	{doc: docWith("faults: [{kind: reset, when: {event: request, nth: 1, edge: server}}]\n"), at: "faults[0].when"},
	{doc: docWith("faults: [{kind: reset}, {kind: reset, when: {event: request, after_heal: 0}}]\n"), at: "faults[1].when",
		refusedBetweenFields: map[string]string{
			"event=tools_call": "only the request event waits for a heal", "event=sse_event": "as tools_call",
			"event=resume": "as tools_call", "event=initialize": "as tools_call", "event=discover": "as tools_call",
		}},
	{doc: docWith("faults: [{kind: reset, repeat: {every: 10s, count: 2, jitter: 0s}}]\n"), at: "faults[0].repeat"},
	{doc: faultDoc("idle_timeout", "{idle: 60s, close: reset, for: 0s}"), at: "faults[0].params", def: "params.idle_timeout"},
	{doc: faultDoc("reset", "{after: 1s, for: 0s}"), at: "faults[0].params", def: "params.reset"},
	{doc: faultDoc("latency", "{latency: 1s, jitter: 0s, stream: downstream, for: 0s}"), at: "faults[0].params", def: "params.latency"},
	{doc: faultDoc("bandwidth", "{rate: 100, stream: downstream, for: 0s}"), at: "faults[0].params", def: "params.bandwidth"},
	{doc: faultDoc("slicer", "{average_size: 100, size_variation: 0, delay: 0s, stream: downstream, for: 0s}"), at: "faults[0].params", def: "params.slicer"},
	{doc: faultDoc("limit_data", "{bytes: 100, stream: downstream, for: 0s}"), at: "faults[0].params", def: "params.limit_data"},
	{doc: faultDoc("partition", "{for: 1m, mode: refuse}"), at: "faults[0].params", def: "params.partition"},
	{doc: faultDoc("http_status", "{status: 503, count: 0, for: 0s}"), at: "faults[0].params", def: "params.http_status"},
	{doc: faultDoc("restart", "{role: server, replica: 0, graceful: false}"), at: "faults[0].params", def: "params.restart"},
	{doc: faultDoc("crash", "{role: server, replica: 0, down: 0s}"), at: "faults[0].params", def: "params.crash"},
	{doc: faultDoc("pause", "{role: server, replica: 0, for: 1s}"), at: "faults[0].params", def: "params.pause"},
	{doc: faultDoc("expire_session", "{}"), at: "faults[0].params", def: "params.expire_session"},
	{doc: faultDoc("terminate_session", "{}"), at: "faults[0].params", def: "params.terminate_session"},
	{doc: faultDoc("drop_tasks", "{}"), at: "faults[0].params", def: "params.drop_tasks"},
}

// kindsWithParams are the fault kinds a fault without params cannot be,
// with why: their params have a field to write, or the kind needs the
// server's task store.
func kindsWithParams() map[string]string {
	out := map[string]string{"kind=drop_tasks": "drop_tasks needs server.tasks"}
	for _, kind := range []string{"idle_timeout", "latency", "bandwidth", "slicer", "limit_data", "partition", "http_status", "restart", "crash", "pause"} {
		out["kind="+kind] = kind + " has params to write"
	}
	return out
}

// TestSchemaOverlayAgreesWithTheLoader tries every simple rule of the
// schema (the overlay's values, bounds, positive durations and required
// fields, and the lists the loader's types give) against the loader, at
// every mapping of an experiment: each value a list gives and each bound
// is accepted by both, a value beyond is refused by both, and so is a
// required field left out. Every rule of every mapping is tried: a site
// must write each field that has one.
func TestSchemaOverlayAgreesWithTheLoader(t *testing.T) {
	root := schemaJSON(t)
	tried := map[string]map[string]bool{} // schema → the constrained fields tried
	want := map[string][]string{}         // schema → its constrained fields
	for _, s := range overlaySites {
		key := s.def
		if key == "" {
			key = strings.Join(strings.FieldsFunc(s.at, func(r rune) bool { return r >= '0' && r <= '9' }), "#")
		}
		sch := schemaAt(t, root, s.def, s.at)
		require.NotNil(t, sch, "a schema for %s", key)
		fields := mappingAt(t, parseYAML(t, s.doc), s.at)
		if tried[key] == nil {
			tried[key] = map[string]bool{}
		}
		want[key] = constrained(root, sch)
		if s.own != nil {
			want[key] = slices.DeleteFunc(want[key], func(f string) bool { return !slices.Contains(s.own, f) })
		}
		for _, m := range siteMutations(root, sch, fields) {
			tried[key][m.field] = true
			t.Run(key+"/"+m.name, func(t *testing.T) {
				doc := parseYAML(t, s.doc)
				m.apply(mappingAt(t, doc, s.at))
				out, err := yaml.Marshal(doc)
				require.NoError(t, err)
				_, lerr := spec.Parse("x.yaml", out)
				serr := schemaCheck(t, doc)
				field := strings.TrimPrefix(s.at+"."+m.field, ".")
				why, between := s.refusedBetweenFields[m.name]
				switch {
				case m.refuse:
					require.Error(t, lerr, "the loader refuses %s", out)
					assert.True(t, loaderRefusedAt(lerr, field), "the loader refuses at %s: %v", field, lerr)
					require.Error(t, serr, "the schema refuses %s", out)
					assert.True(t, refusedAt(serr, field), "the schema refuses at %s: %v", field, serr)
				case between:
					assert.Error(t, lerr, "the loader refuses it: %s", why)
				default:
					assert.NoError(t, lerr, "the loader takes %s", out)
					assert.NoError(t, serr, "the schema takes %s", out)
				}
			})
		}
	}
	for def := range root["definitions"].(map[string]any) {
		if strings.Contains(def, ".") { // a kind's params, a target's settings
			assert.Contains(t, want, def, "no site tries the rules of %s", def)
		}
	}
	for key, fields := range want {
		for _, f := range fields {
			assert.True(t, tried[key][f], "no site writes %s of %s, which the schema constrains", f, key)
		}
	}
}

func schemaJSON(t *testing.T) map[string]any {
	t.Helper()
	b, err := spec.Schema()
	require.NoError(t, err)
	var root map[string]any
	require.NoError(t, json.Unmarshal(b, &root))
	return root
}

// resolve follows a reference to its definition.
func resolve(root, s map[string]any) map[string]any {
	ref, ok := s["$ref"].(string)
	if !ok {
		return s
	}
	return root["definitions"].(map[string]any)[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
}

// schemaAt is the schema of the mapping at path (the loader's field path),
// or the definition def.
func schemaAt(t *testing.T, root map[string]any, def, path string) map[string]any {
	t.Helper()
	if def != "" {
		return root["definitions"].(map[string]any)[def].(map[string]any)
	}
	s := root
	for _, seg := range pathSegments(path) {
		if strings.Trim(seg, "0123456789") == "" {
			s = resolve(root, s["items"].(map[string]any))
			continue
		}
		s = resolve(root, s["properties"].(map[string]any)[seg].(map[string]any))
	}
	return s
}

func pathSegments(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(strings.NewReplacer("[", ".", "]", "").Replace(path), ".")
}

// mappingAt is the mapping node at path in doc.
func mappingAt(t *testing.T, doc *yaml.Node, path string) *yaml.Node {
	t.Helper()
	n := doc.Content[0]
	for _, seg := range pathSegments(path) {
		if n.Kind == yaml.SequenceNode {
			var i int
			_, err := fmt.Sscan(seg, &i)
			require.NoError(t, err)
			n = n.Content[i]
			continue
		}
		n = valueOf(n, seg)
		require.NotNil(t, n, "%s in the site's document", path)
	}
	require.Equal(t, yaml.MappingNode, n.Kind, path)
	return n
}

func valueOf(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// rules of one field's schema that the test tries.
type fieldRules struct {
	enum                []any
	min, max, exclusive *float64
	positive            bool
}

func rulesOf(root, s map[string]any) (fieldRules, bool) {
	var r fieldRules
	if s["$ref"] == "#/definitions/positive_duration" {
		r.positive = true
		return r, true
	}
	if _, ref := s["$ref"]; ref {
		return r, false // a duration: its shape is the table's to try
	}
	num := func(k string) *float64 {
		if v, ok := s[k].(float64); ok {
			return &v
		}
		return nil
	}
	r.enum, _ = s["enum"].([]any)
	r.min, r.max, r.exclusive = num("minimum"), num("maximum"), num("exclusiveMinimum")
	return r, r.enum != nil || r.min != nil || r.max != nil || r.exclusive != nil
}

// constrained are the fields of a mapping's schema with a rule the test
// tries, or required.
func constrained(root, sch map[string]any) []string {
	var out []string
	props, _ := sch["properties"].(map[string]any)
	for name, p := range props {
		ps, _ := p.(map[string]any)
		if _, ok := rulesOf(root, ps); ok && ps["const"] == nil {
			out = append(out, name)
		}
	}
	for _, r := range requiredOf(sch) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

func requiredOf(sch map[string]any) []string {
	var out []string
	req, _ := sch["required"].([]any)
	for _, r := range req {
		out = append(out, r.(string))
	}
	return out
}

// mutation is one change of one field of a site's mapping.
type mutation struct {
	name, field string
	refuse      bool
	apply       func(m *yaml.Node)
}

// siteMutations are the changes of the fields the mapping writes: every
// value of a list and one beyond it, each bound and one past it, a zero
// positive duration, a required field left out.
func siteMutations(root, sch map[string]any, m *yaml.Node) []mutation {
	var out []mutation
	props, _ := sch["properties"].(map[string]any)
	for i := 0; i+1 < len(m.Content); i += 2 {
		name := m.Content[i].Value
		ps, _ := props[name].(map[string]any)
		r, ok := rulesOf(root, ps)
		if !ok || ps["const"] != nil {
			continue
		}
		set := func(v any, refuse bool) {
			out = append(out, mutation{name: fmt.Sprintf("%s=%v", name, v), field: name, refuse: refuse,
				apply: func(m *yaml.Node) { *valueOf(m, name) = *scalar(v) }})
		}
		for _, v := range r.enum {
			set(v, false)
		}
		if r.enum != nil {
			set("bogus", true)
		}
		if r.min != nil {
			set(*r.min, false)
			set(*r.min-1, true)
		}
		if r.max != nil {
			set(*r.max, false)
			set(*r.max+1, true)
		}
		if r.exclusive != nil {
			set(*r.exclusive, true)
		}
		if r.positive {
			set("1s", false)
			set("0s", true)
		}
	}
	for _, name := range requiredOf(sch) {
		out = append(out, mutation{name: "without " + name, field: name, refuse: true, apply: func(m *yaml.Node) {
			for i := 0; i+1 < len(m.Content); i += 2 {
				if m.Content[i].Value == name {
					m.Content = slices.Delete(m.Content, i, i+2)
					return
				}
			}
		}})
	}
	return out
}

// scalar is a YAML scalar holding v, tagged as what it is.
func scalar(v any) *yaml.Node {
	switch x := v.(type) {
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(x)}
	case float64:
		if x == float64(int64(x)) {
			return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: fmt.Sprint(int64(x))}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: fmt.Sprint(x)}
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: fmt.Sprint(v)}
}

// loaderRefusedAt says whether one of the loader's problems is at field,
// above it or below it.
func loaderRefusedAt(err error, field string) bool {
	var se *spec.Error
	if !errors.As(err, &se) {
		return false
	}
	want := pathSegments(field)
	for _, p := range se.Problems {
		at := pathSegments(p.Field)
		n := min(len(at), len(want))
		if slices.Equal(at[:n], want[:n]) {
			return true
		}
	}
	return false
}

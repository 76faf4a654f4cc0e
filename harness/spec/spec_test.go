package spec

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/internal/dur"
)

const good = `name: double-charge-lb-idle
description: The incident.
seed: 7
time_scale: 0.05
server:
  retention_events: 100
  keepalive: 0s
client:
  target: naive
  backoff: {initial: 1s, max: 30s, retries: 1}
workload:
  clients: 2
  calls:
    - {tool: charge, args: {amount_cents: 4999}, duration: 90s}
    - {tool: chatty, args: {events: 500}, duration: 6m}
faults:
  - {kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}}
expect:
  verdict: fail
  violations: [no_duplicate_side_effects, no_session_fork]
  figures: {duplicates: ">=1", forks: 1}
`

func TestParseGood(t *testing.T) {
	x, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	assert.Equal(t, "reference", x.Server.Target, "defaulted")
	assert.Equal(t, "gone", referenceOptions(x).OnUnresumable, "defaulted")
	assert.Equal(t, 100, referenceOptions(x).RetentionEvents)
	assert.Equal(t, 10*time.Minute, referenceOptions(x).SessionTTL.D(), "defaulted")

	p := x.Plan(Overrides{})
	assert.Equal(t, int64(7), p.Seed)
	w := p.Template.Expand()
	require.Len(t, w.Clients, 2)
	assert.Equal(t, "c2-1", w.Clients[1].Calls[0].ID)
	assert.Equal(t, 4500*time.Millisecond, w.Clients[0].Calls[0].Duration)
	require.Len(t, x.Faults, 1)
	assert.Equal(t, &faults.IdleTimeout{Idle: dur.Duration(time.Minute), Close: "reset"}, x.Faults[0].Params,
		"the loaded experiment keeps the params decoded, as written")
	require.Len(t, p.Faults, 1)
	assert.Equal(t, 3*time.Second, p.Faults[0].Window, "the idle timeout, scaled")
	assert.Equal(t, &faults.IdleTimeout{Idle: dur.Duration(3 * time.Second), Close: "reset"}, p.Faults[0].Params, "scaled by the plan")
	assert.Equal(t, 4500*time.Millisecond+18*time.Second+3*time.Second, p.Scheduled)
	assert.Equal(t, time.Second/20, theClientOptions(p.Client.Options).Backoff.Initial.D())
	assert.Equal(t, 1, theClientOptions(p.Client.Options).Backoff.Retries)
	ok, why := p.Expect.Match(matchingVerdict())
	assert.True(t, ok, why)

	scale := 0.01
	seed := int64(9)
	p = x.Plan(Overrides{TimeScale: &scale, Seed: &seed})
	assert.Equal(t, 900*time.Millisecond, p.Template.Calls[0].Duration)
	assert.Equal(t, int64(9), p.Seed)
}

func TestParseProblemsNameFileLineColumnAndField(t *testing.T) {
	tests := []struct {
		name    string
		replace [2]string // old, new applied to good
		want    string
	}{
		{"unknown top-level key", [2]string{"seed: 7", "sede: 7"}, "x.yaml:3:1: sede: unknown field"},
		{"unknown nested key", [2]string{"  keepalive: 0s", "  keepalives: 0s"}, "x.yaml:7:3: server.keepalives: unknown field"},
		{"unknown params key", [2]string{"idle: 60s", "idel: 60s"}, "x.yaml:17:43: faults[0].params.idel: unknown field"},
		{"bad enum", [2]string{"target: naive", "target: clever"}, "x.yaml:9:11: client.target: must be one of"},
		{"bad duration", [2]string{"duration: 90s", "duration: soon"}, "x.yaml:14:60: workload.calls[0].duration: \"soon\" is not a duration"},
		{"wrong type", [2]string{"clients: 2", "clients: many"}, "x.yaml:12:12: workload.clients: expected an integer, got the text `many`"},
		{"too many clients", [2]string{"clients: 2", "clients: 100001"}, "x.yaml:12:12: workload.clients: must be between 1 and 100000 (one session each), got 100001"},
		{"no clients", [2]string{"clients: 2", "clients: -1"}, "workload.clients: must be between 1 and 100000"},
		{"duplicate key", [2]string{"seed: 7", "seed: 7\nseed: 8"}, `x.yaml:4:7: seed: the key "seed" appears twice, at line 3 and again at line 4`},
		{"a list for a mapping", [2]string{"client:\n", "client: [naive]\nclient2:\n"}, "client: expected a mapping, got a list"},
		{"params validation", [2]string{"idle: 60s", "idle: 0s"}, "faults[0].params.idle: must be positive"},
		{"unknown fault", [2]string{"kind: idle_timeout", "kind: gremlins"}, "x.yaml:17:12: faults[0].kind: unknown fault kind"},
		{"bad bound", [2]string{`duplicates: ">=1"`, `duplicates: "at least one"`}, "expect.figures.duplicates:"},
		{"unknown figure", [2]string{`duplicates: ">=1"`, `dupes: ">=1"`}, "expect.figures.dupes: unknown figure"},
		{"unknown invariant", [2]string{"no_session_fork]", "no_forks]"}, "expect.violations[1]: unknown invariant"},
		{"bad name", [2]string{"name: double-charge-lb-idle", "name: Double Charge"}, "x.yaml:1:7: name: must be lower-case"},
		{"naive with file cursor", [2]string{"target: naive", "target: naive\n  cursor: file"}, "client.cursor: the naive client keeps no cursor"},
		{"missing description", [2]string{"description: The incident.", "description: ''"}, "description: is required"},
		{"syntax error", [2]string{"time_scale: 0.05", "time_scale: [0.05"}, "x.yaml:4: YAML syntax: did not find expected ',' or ']'"},
		{"syntax error in a mapping", [2]string{"  keepalive: 0s", "   keepalive: 0s"}, "x.yaml:7: YAML syntax: mapping values are not allowed in this context"},
		{"chatty without events", [2]string{"args: {events: 500}", "args: {}"}, "workload.calls[1].args.events: chatty needs"},
		{"reference-only knob on an SDK server", [2]string{"  retention_events: 100", "  target: go-sdk\n  retention_events: 100\n  on_unresumable: gone"}, "server.on_unresumable: only the reference server has this knob (server.target is go-sdk)"},
		{"cursor on an SDK client", [2]string{"target: naive", "target: mcp-go\n  cursor: file"}, "client.cursor: the mcp-go client does not take this knob"},
		{"unknown tool argument", [2]string{"args: {amount_cents: 4999}", "args: {amount_cents: 4999, idempotency_kye: k}"}, "workload.calls[0].args.idempotency_kye: unknown argument of charge (known: amount_cents, idempotency_key, order_id)"},
		{"fail with no violations", [2]string{"violations: [no_duplicate_side_effects, no_session_fork]", "violations: []"}, "expect.violations: an experiment expected to fail violates something"},
		{"empty file", [2]string{good, ""}, "x.yaml: the file is empty"},
		{"zero time scale", [2]string{"time_scale: 0.05", "time_scale: 0"}, "x.yaml:4:13: time_scale: must be greater than 0"},
		{"unknown repeat key", [2]string{"at: 0s,", "at: 0s, repeat: {evry: 1m, count: 2},"},
			"x.yaml:17:43: faults[0].repeat.evry: unknown field (known: count, every, jitter)"},
		{"repeat validation", [2]string{"at: 0s,", "at: 0s, repeat: {every: 1m, count: 0},"},
			"x.yaml:17:61: faults[0].repeat.count: must be between 1 and 10000, got 0"},
		{"unknown fault key", [2]string{"at: 0s,", "at: 0s, whence: {tool: charge},"},
			"x.yaml:17:34: faults[0].whence: unknown field (known: at, kind, params, repeat, when)"},
		{"unknown trigger key", [2]string{"at: 0s,", "at: 0s, when: {event: tools_call, tol: charge},"},
			"x.yaml:17:60: faults[0].when.tol: unknown field (known: after, after_heal, edge, event, nth, tool)"},
		{"unknown trigger event", [2]string{"at: 0s,", "at: 0s, when: {event: soon},"},
			"faults[0].when.event: must be one of tools_call, sse_event, resume, initialize, discover, request, got \"soon\""},
		{"trigger field of another event", [2]string{"at: 0s,", "at: 0s, when: {event: resume, after: 30s},"},
			"faults[0].when.after: only tools_call waits for a call in flight, not resume"},
		{"trigger waiting for its own heal", [2]string{"at: 0s,", "at: 0s, when: {event: request, after_heal: 0},"},
			"faults[0].when.after_heal: a fault cannot wait for its own heal"},
		{"wrong type beside another value", [2]string{"at: 0s,", "at: 0s, repeat: {every: 1m, count: many},"},
			"x.yaml:17:61: faults[0].repeat.count: expected an integer, got the text `many`"},
		{"a long wrong value beside another", [2]string{"at: 0s,", "at: 0s, repeat: {every: 1m, count: a-great-many},"},
			"x.yaml:17:61: faults[0].repeat.count: expected an integer, got the text `a-great...`"},
		{"a tool the built-in server lacks", [2]string{"tool: chatty", "tool: hello"},
			"workload.calls[1].tool: the reference server has only the tools charge and chatty; \"hello\" would be a tool of your own server"},
		{"a tool name MCP does not allow", [2]string{"tool: chatty", "tool: 'hello world'"}, "workload.calls[1].tool: must be a tool name"},
		{"a bad key path", [2]string{"duration: 6m}", "duration: 6m, key: 'a..b'}"}, "workload.calls[1].key: must be an argument path"},
		{"an unknown placeholder", [2]string{"args: {amount_cents: 4999}", "args: {amount_cents: 4999, order_id: 'o-{{cal}}'}"},
			"workload.calls[0].args.order_id: unknown placeholder {{cal}} (known: {{call}}, {{client}})"},
		{"an unknown protocol", [2]string{"target: naive", "target: naive\n  protocol: 2026-01-01"},
			`client.protocol: must be one of 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28, got "2026-01-01"`},
		{"2026-07-28 from the mcp-go client", [2]string{"target: naive", "target: mcp-go\n  protocol: 2026-07-28"},
			"x.yaml:10:13: client.protocol: 2026-07-28 is spoken by the naive, resumable and go-sdk clients, not by the mcp-go client adapter " +
				"(mcp-go v1.2.1 itself has 2026-07-28 (client.WithProtocolVersion and server/discover in its client, a stateless handler in its server), " +
				"but chaosrun's mcp-go adapters drive it at the session revisions only)"},
		{"2026-07-28 to the mcp-go server", [2]string{"  keepalive: 0s\nclient:\n  target: naive", "  target: mcp-go\nclient:\n  target: naive\n  protocol: 2026-07-28"},
			"x.yaml:7:11: server.target: client.protocol is 2026-07-28, which the mcp-go server adapter does not speak (mcp-go v1.2.1 itself has 2026-07-28"},
		{"drop_tasks without tasks", [2]string{"kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}", "kind: drop_tasks, at: 0s"},
			"faults[0].kind: drop_tasks needs the reference server's task store: set server.tasks: extension or legacy"},
		{"legacy tasks from the naive client", [2]string{"target: naive", "target: naive\n  tasks: legacy"},
			"client.tasks: the 2025-11-25 tasks are spoken by the resumable client at 2025-11-25 (client.target is naive, client.protocol 2025-11-25)"},
		{"legacy tasks at 2026-07-28", [2]string{"target: naive", "target: resumable\n  protocol: 2026-07-28\n  tasks: legacy"},
			"client.tasks: the 2025-11-25 tasks are spoken by the resumable client at 2025-11-25 (client.target is resumable, client.protocol 2026-07-28)"},
		{"tasks on the go-sdk server", [2]string{"  keepalive: 0s", "  target: go-sdk\n  tasks: legacy"},
			"server.tasks: only the reference and mcp-go servers run tasks (server.target is go-sdk)"},
		{"the extension on the mcp-go server", [2]string{"  keepalive: 0s", "  target: mcp-go\n  tasks: extension"},
			"server.tasks: the mcp-go server runs only the 2025-11-25 tasks: use legacy"},
		{"tasks on a session revision", [2]string{"target: naive", "target: resumable\n  tasks: extension"},
			"client.tasks: the tasks extension is spoken by the resumable client at 2026-07-28 (client.target is resumable, client.protocol 2025-11-25)"},
		{"an unknown on_cancel", [2]string{"  keepalive: 0s", "  keepalive: 0s\n  on_cancel: rollback"},
			`server.on_cancel: must be one of stop, ignore, commit_then_notice, got "rollback"`},
		{"params of the wrong type", [2]string{"idle: 60s", "idle: [60s]"},
			"x.yaml:17:42: faults[0].params: line 17 column 49: a duration must be a string like 90s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, tc.replace[0], tc.replace[1], 1)
			require.NotEqual(t, good, src, "the replacement applies")
			_, err := Parse("x.yaml", []byte(src))
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotRegexp(t, `: line \d+:`, err.Error(), "the line is said once")
		})
	}
}

func TestParseTakesToolsOfYourOwnServer(t *testing.T) {
	src := strings.NewReplacer(
		"  retention_events: 100\n  keepalive: 0s\n", "  target: command\n  command: [./my-server]\n",
		"    - {tool: chatty, args: {events: 500}, duration: 6m}\n", "    - {tool: book_trip, args: {trip: 'trip-{{call}}', who: '{{client}}'}, key: trip, idempotent: false}\n",
	).Replace(good)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	c := x.Plan(Overrides{}).Template.Calls[1]
	assert.Equal(t, "book_trip", c.Tool)
	assert.Equal(t, "trip", c.Key)
	require.NotNil(t, c.Idempotent)
	assert.False(t, *c.Idempotent)
	assert.Zero(t, c.Duration, "a tool of your own takes no duration")
}

func TestParseReportsEveryProblem(t *testing.T) {
	src := strings.NewReplacer("target: naive", "target: clever", "retention_events: 100", "retention_events: -1").Replace(good)
	_, err := Parse("x.yaml", []byte(src))
	var se *Error
	require.True(t, errors.As(err, &se))
	assert.Len(t, se.Problems, 2)
}

func TestLoadPathsRejectsDuplicateNamesAndLoadsFolders(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(good), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("ignored"), 0o644))
	exps, err := LoadPaths([]string{dir})
	require.NoError(t, err)
	require.Len(t, exps, 1)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "b.yaml"), []byte(good), 0o644))
	_, err = LoadPaths([]string{dir})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "b.yaml:1:7: name:")

	_, err = LoadPaths([]string{filepath.Join(dir, "missing.yaml")})
	require.ErrorIs(t, err, ErrInvalid)
	_, err = LoadPaths([]string{t.TempDir()})
	require.ErrorContains(t, err, "holds no .yaml")
}

func TestSecondDocumentIsAnError(t *testing.T) {
	_, err := Parse("x.yaml", []byte(good+"---\nname: other\n"))
	require.ErrorContains(t, err, "one experiment per file")
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("name: x\nfaults: [{kind: partition, params: {for: 1s, mode: blackhole}}]\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := Parse("f.yaml", b)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalid)
			return
		}
		p := x.Plan(Overrides{})
		require.NotEmpty(t, p.Template.Expand().Clients)
		require.Positive(t, p.Deadline)
	})
}

func TestExperimentsShareNoDefaults(t *testing.T) {
	src := strings.Replace(good, "backoff: {initial: 1s, max: 30s, retries: 1}", "backoff: {initial: 1s, max: 30s}", 1)
	require.NotEqual(t, good, src)
	a, err := Parse("a.yaml", []byte(src))
	require.NoError(t, err)
	b, err := Parse("b.yaml", []byte(src))
	require.NoError(t, err)
	require.Equal(t, 8, theClientOptions(a.Client.Options).Backoff.Retries, "defaulted")
	theClientOptions(a.Client.Options).Backoff.Retries = 3
	assert.Equal(t, 8, theClientOptions(b.Client.Options).Backoff.Retries, "one experiment's retries are not another's")
	assert.NotSame(t, a.Client.Options, b.Client.Options, "nor are its options")
	assert.NotSame(t, a.Faults[0].Params, b.Faults[0].Params, "nor are its fault params")
}

func TestParseTakesAClientOfYourOwn(t *testing.T) {
	src := strings.Replace(good, "  target: naive\n  backoff: {initial: 1s, max: 30s, retries: 1}\n", "  target: command\n  command: [./my-client, --fast]\n", 1)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, []string{"./my-client", "--fast"}, clientCommand(x.Plan(Overrides{}).Client.Options).Command)

	_, err = Parse("x.yaml", []byte(strings.Replace(good, "  target: naive\n", "  target: command\n", 1)))
	require.ErrorContains(t, err, "client.command: is required when client.target is command")
	_, err = Parse("x.yaml", []byte(strings.Replace(good, "  target: naive\n", "  target: command\n  command: [c]\n", 1)))
	require.ErrorContains(t, err, "client.backoff: a bring-your-own client is given no knobs")
}

func TestParseFillsNoUnknownPlaceholderOfAClientCommand(t *testing.T) {
	tests := []struct {
		name    string
		command string
		want    string // "" = valid
	}{
		{"the url", `[./my-client, --http, "{url}"]`, ""},
		{"its parts", `[./my-client, -host, "{host}", -port, "{port}", "--addr={addr}"]`, ""},
		{"JSON arguments", `[./loadtest, '-args={"city": "nyc"}', "{url}"]`, ""},
		{"an unknown one", `[./my-client, --http, "{uri}"]`, `x.yaml:10:34: client.command[2]: unknown placeholder {uri} (known: {url}, {addr}, {host}, {port})`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, "  target: naive\n  backoff: {initial: 1s, max: 30s, retries: 1}\n", "  target: command\n  command: "+tc.command+"\n", 1)
			require.NotEqual(t, good, src)
			_, err := Parse("x.yaml", []byte(src))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestParseModern(t *testing.T) {
	src := strings.Replace(good, "target: naive", "target: naive\n  protocol: 2026-07-28", 1)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "2026-07-28", x.Client.Protocol)
	assert.Equal(t, "stop", referenceOptions(x).OnCancel, "the default on_cancel")

	bad := strings.Replace(src, "kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}", "kind: terminate_session, at: 0s", 1)
	_, err = Parse("x.yaml", []byte(bad))
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "x.yaml:18:12: faults[0].kind: terminate_session needs a session, and there are none at 2026-07-28 (client.protocol)")
}

// TestParseModernGoSDK: the go-sdk adapters speak 2026-07-28 in both roles.
func TestParseModernGoSDK(t *testing.T) {
	src := strings.NewReplacer("  retention_events: 100\n  keepalive: 0s\n", "  target: go-sdk\n",
		"  target: naive\n  backoff: {initial: 1s, max: 30s, retries: 1}\n", "  target: go-sdk\n  protocol: 2026-07-28\n  backoff: {retries: 1}\n").Replace(good)
	require.NotEqual(t, good, src)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "go-sdk", x.Server.Target)
	assert.Equal(t, "go-sdk", x.Client.Target)
	assert.Equal(t, "2026-07-28", x.Client.Protocol)
}

func TestUnspoken(t *testing.T) {
	tests := []struct {
		client           bool
		target, protocol string
		want             string
	}{
		{true, "go-sdk", "2026-07-28", ""},
		{false, "go-sdk", "2026-07-28", ""},
		{true, "naive", "2026-07-28", ""},
		{false, "reference", "2026-07-28", ""},
		{true, "mcp-go", "2026-07-28", "mcp-go does not speak 2026-07-28"},
		{false, "mcp-go", "2026-07-28", "mcp-go does not speak 2026-07-28"},
		{true, "mcp-go", "2025-11-25", ""},
		{false, "mcp-go", "2025-03-26", ""},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, Unspoken(tc.client, tc.target, tc.protocol), "%+v", tc)
	}
}

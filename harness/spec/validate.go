package spec

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/targets/workload"
	"gopkg.in/yaml.v3"
)

// Accepted values of the enumerated fields.
var (
	ServerTargets = []string{targets.Reference, targets.GoSDK, targets.MCPGo, targets.Command, targets.Image}
	ClientTargets = []string{targets.Resumable, targets.Naive, targets.GoSDK, targets.MCPGo, targets.Command}
	Unresumable   = []string{"gone", "silent_head"}
	EventStores   = []string{"memory", "file", "redis"}
	Cursors       = []string{"memory", "file"}
	Verdicts      = []string{"pass", "fail", "inconclusive"}
	Tools         = []string{mcpwire.ToolCharge, mcpwire.ToolChatty}
	nameRE        = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// MaxClients bounds workload.clients. Every client is a session with its own
// connections through the proxy, so the bound is about file descriptors and
// memory on one machine: 10,000 clients run on 2 cores and 24 GiB (see the
// section on scale in docs/performance.md), and ten times that is still one machine's worth.
const MaxClients = 100_000

// defaultRetries is client.backoff.retries when the file leaves it out.
const defaultRetries = 8

func (x *Experiment) applyDefaults() {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	if _, set := x.nodes["seed"]; !set {
		x.Seed = 1
	}
	if _, set := x.nodes["time_scale"]; !set {
		x.TimeScale = 1
	}
	def(&x.Server.Target, targets.Reference)
	def(&x.Server.OnUnresumable, "gone")
	def(&x.Server.EventStore, "memory")
	if x.Server.Replicas == 0 {
		x.Server.Replicas = 1
	}
	def(&x.Server.OnCancel, tools.OnCancelStop)
	def(&x.Server.Tasks, "off")
	def(&x.Server.TaskStore, "memory")
	def(&x.Client.Tasks, "off")
	if x.Server.TaskTTL == 0 {
		x.Server.TaskTTL = dur.Duration(time.Hour)
	}
	if x.Server.TaskPoll == 0 {
		x.Server.TaskPoll = dur.Duration(5 * time.Second)
	}
	if _, set := x.nodes["server.retention_events"]; !set {
		x.Server.RetentionEvents = 1000
	}
	if _, set := x.nodes["server.session_ttl"]; !set {
		x.Server.SessionTTL = dur.Duration(10 * time.Minute)
	}
	x.applyBalancerDefaults()
	def(&x.Client.Target, targets.Resumable)
	def(&x.Client.Cursor, "memory")
	def(&x.Client.Protocol, mcpwire.LatestVersion)
	if x.Client.Backoff.Initial == 0 {
		x.Client.Backoff.Initial = dur.Duration(time.Second)
	}
	if x.Client.Backoff.Max == 0 {
		x.Client.Backoff.Max = dur.Duration(30 * time.Second)
	}
	if x.Client.Backoff.Retries == nil {
		x.Client.Backoff.Retries = new(defaultRetries) // each experiment its own
	}
	if x.Workload.Clients == 0 {
		x.Workload.Clients = 1
	}
}

func (x *Experiment) validate(ps *problems) {
	bad := func(path, format string, args ...any) {
		line, col := x.at(path)
		ps.add(line, col, path, format, args...)
	}
	oneOf := func(path, v string, allowed []string) {
		if !slices.Contains(allowed, v) {
			bad(path, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
		}
	}
	if !nameRE.MatchString(x.Name) {
		bad("name", "must be lower-case letters, digits and single dashes, got %q", x.Name)
	}
	if strings.TrimSpace(x.Description) == "" {
		bad("description", "is required: say what the experiment shows and why")
	}
	if x.TimeScale <= 0 || x.TimeScale > 10 {
		bad("time_scale", "must be greater than 0 and at most 10, got %v", x.TimeScale)
	}
	x.validateServer(bad, oneOf)
	x.validateClient(bad, oneOf)
	x.validateBalancer(bad, oneOf)
	x.validateWorkload(bad, oneOf)
	x.validateFaults(bad, ps)
	x.validateExpect(bad, oneOf)
}

type badFunc func(path, format string, args ...any)
type oneOfFunc func(path, v string, allowed []string)

func (x *Experiment) validateServer(bad badFunc, oneOf oneOfFunc) {
	s := x.Server
	oneOf("server.target", s.Target, ServerTargets)
	oneOf("server.on_unresumable", s.OnUnresumable, Unresumable)
	oneOf("server.event_store", s.EventStore, EventStores)
	switch {
	case s.Replicas < 1 || s.Replicas > MaxReplicas:
		bad("server.replicas", "must be between 1 and %d, got %d", MaxReplicas, s.Replicas)
	case s.Replicas > 1 && x.Balancer == nil:
		bad("server.replicas", "%d replicas need a balancer: block to spread the requests over them", s.Replicas)
	}
	oneOf("server.on_cancel", s.OnCancel, tools.OnCancelModes)
	oneOf("server.tasks", s.Tasks, TaskModes)
	if _, set := x.nodes["server.tasks"]; set && s.Target != targets.Reference {
		switch {
		case !slices.Contains(legacyTaskServers, s.Target):
			bad("server.tasks", "only the reference and mcp-go servers run tasks (server.target is %s)", s.Target)
		case s.Tasks == "extension":
			bad("server.tasks", "the %s server runs only the 2025-11-25 tasks: use legacy", s.Target)
		}
	}
	oneOf("server.task_store", s.TaskStore, EventStores)
	if s.RetentionEvents < 0 {
		bad("server.retention_events", "must be 0 (unbounded) or more, got %d", s.RetentionEvents)
	}
	switch {
	case s.Target == targets.Command && len(s.Command) == 0:
		bad("server.command", "is required when server.target is command")
	case s.Target != targets.Command && len(s.Command) > 0:
		bad("server.command", "is only used when server.target is command")
	case s.Target == targets.Image && s.Image == "":
		bad("server.image", "is required when server.target is image")
	case s.Target != targets.Image && s.Image != "":
		bad("server.image", "is only used when server.target is image")
	}
	switch {
	case s.Listen == "":
	case s.Target != targets.Command:
		bad("server.listen", "is only used when server.target is command")
	case s.Replicas > 1:
		bad("server.listen", "a fixed address serves one replica, and server.replicas is %d: let each take its own ({addr}, {port})", s.Replicas)
	default:
		if msg := loopbackAddr(s.Listen); msg != "" {
			bad("server.listen", "%s", msg)
		}
	}
	if s.Target != targets.Reference {
		for _, knob := range referenceOnly {
			if _, set := x.nodes["server."+knob]; set {
				bad("server."+knob, "only the reference server has this knob (server.target is %s)", s.Target)
			}
		}
	}
	if s.Target == targets.Command || s.Target == targets.Image {
		for _, knob := range sdkKnobs {
			if _, set := x.nodes["server."+knob]; set {
				bad("server."+knob, "a bring-your-own server is given no knobs, only its environment (server.target is %s)", s.Target)
			}
		}
	}
}

// MaxReplicas bounds server.replicas: each is a real process on a machine
// shared with the rest of the run.
const MaxReplicas = 9

// sdkKnobs are the server knobs the SDK servers take besides the reference
// server; a bring-your-own server takes none.
var sdkKnobs = []string{"retention_events", "session_ttl"}

// referenceOnly are the server knobs only the reference server implements;
// the SDK servers take retention_events and session_ttl.
var referenceOnly = []string{"retention_age", "on_unresumable", "event_store", "keepalive", "retry", "on_cancel",
	"task_store", "task_ttl", "task_poll_interval"}

// TaskModes are the tasks values: off, the 2026-07-28 extension, or the
// experimental tasks of 2025-11-25 (legacy).
var TaskModes = []string{"off", "extension", "legacy"}

// legacyTaskServers are the server targets with the 2025-11-25 tasks:
// the reference server and mcp-go's.
var legacyTaskServers = []string{targets.Reference, targets.MCPGo}

// sdkClients take only backoff.retries of the client knobs: the SDKs keep
// their delays and cursors to themselves.
var sdkClientOnly = []string{"cursor", "read_timeout", "backoff.initial", "backoff.max"}

// byoClientKnobs are the client knobs of chaosrun's own clients; a
// bring-your-own client takes none.
var byoClientKnobs = []string{"cursor", "protocol", "read_timeout", "backoff"}

// Protocols lists the client.protocol values, oldest first.
func Protocols() []string {
	return append(slices.Clone(mcpwire.Versions), mcpwire.Version20260728)
}

// modernClients and modernServers are the targets that speak 2026-07-28:
// chaosrun's own clients, the go-sdk adapters (its client through
// ClientSessionOptions.ProtocolVersion, its server stateless), and the
// bring-your-own servers, which answer for themselves.
var (
	modernClients = []string{targets.Naive, targets.Resumable, targets.GoSDK}
	modernServers = []string{targets.Reference, targets.GoSDK, targets.Command, targets.Image}
)

// mcpgoModern is why the mcp-go adapters stay at the session revisions:
// the SDK has the revision, the adapters do not drive it.
const mcpgoModern = "mcp-go v1.2.1 itself has 2026-07-28 (client.WithProtocolVersion and server/discover in its client, " +
	"a stateless handler in its server), but chaosrun's mcp-go adapters drive it at the session revisions only"

// Unspoken says why the client or server target cannot take part in an
// experiment at protocol ("" when it can), in a few words fit for a table
// cell: "mcp-go does not speak 2026-07-28".
func Unspoken(client bool, target, protocol string) string {
	if !mcpwire.ModernVersion(protocol) {
		return ""
	}
	speakers := modernServers
	if client {
		speakers = modernClients
	}
	if slices.Contains(speakers, target) {
		return ""
	}
	return fmt.Sprintf("%s does not speak %s", target, protocol)
}

// validateModern checks what an experiment at 2026-07-28 can ask for: a
// client and a server that speak it, and no fault that needs a session.
func (x *Experiment) validateModern(bad badFunc) {
	const v = mcpwire.Version20260728
	why := func(target string) string {
		if target == targets.MCPGo {
			return mcpgoModern
		}
		return "it speaks the session revisions only"
	}
	if c := x.Client.Target; Unspoken(true, c, v) != "" {
		bad("client.protocol", "%s is spoken by the %s clients, not by the %s client adapter (%s)",
			v, list(modernClients), c, why(c))
	}
	if s := x.Server.Target; Unspoken(false, s, v) != "" {
		bad("server.target", "client.protocol is %s, which the %s server adapter does not speak (%s; use %s)", v, s, why(s), strings.Join(modernServers, ", "))
	}
	for i, f := range x.Faults {
		if f.Kind == faults.KindExpireSession || f.Kind == faults.KindTerminateSession {
			bad(fmt.Sprintf("faults[%d].kind", i), "%s needs a session, and there are none at %s (client.protocol)", f.Kind, v)
		}
	}
}

// list joins names as a sentence does: "a, b and c".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

func (x *Experiment) validateClient(bad badFunc, oneOf oneOfFunc) {
	c := x.Client
	oneOf("client.target", c.Target, ClientTargets)
	oneOf("client.cursor", c.Cursor, Cursors)
	if versions := Protocols(); !slices.Contains(versions, c.Protocol) {
		bad("client.protocol", "must be one of %s, got %q", strings.Join(versions, ", "), c.Protocol)
	}
	if mcpwire.ModernVersion(c.Protocol) {
		x.validateModern(bad)
	}
	oneOf("client.tasks", c.Tasks, TaskModes)
	if c.Tasks == "extension" && (!mcpwire.ModernVersion(c.Protocol) || c.Target != targets.Resumable) {
		bad("client.tasks", "the tasks extension is spoken by the resumable client at 2026-07-28 (client.target is %s, client.protocol %s)", c.Target, c.Protocol)
	}
	if c.Tasks == "legacy" && (c.Protocol != mcpwire.Version20251125 || c.Target != targets.Resumable) {
		bad("client.tasks", "the 2025-11-25 tasks are spoken by the resumable client at 2025-11-25 (client.target is %s, client.protocol %s)", c.Target, c.Protocol)
	}
	for i, f := range x.Faults {
		if f.Kind == faults.KindDropTasks && (x.Server.Tasks == "off" || x.Server.Target != targets.Reference) {
			bad(fmt.Sprintf("faults[%d].kind", i), "drop_tasks needs the reference server's task store: set server.tasks: extension or legacy")
		}
	}
	if x.Server.Tasks == "extension" && !mcpwire.ModernVersion(c.Protocol) {
		bad("server.tasks", "the tasks extension is a 2026-07-28 one, and client.protocol is %s", c.Protocol)
	}
	if x.Server.Tasks == "legacy" && c.Protocol != mcpwire.Version20251125 {
		bad("server.tasks", "the legacy tasks are those of 2025-11-25, and client.protocol is %s", c.Protocol)
	}
	if c.Target == targets.GoSDK || c.Target == targets.MCPGo {
		for _, knob := range sdkClientOnly {
			if _, set := x.nodes["client."+knob]; set {
				bad("client."+knob, "the %s client does not take this knob (only backoff.retries)", c.Target)
			}
		}
	}
	switch {
	case c.Target == targets.Command && len(c.Command) == 0:
		bad("client.command", "is required when client.target is command")
	case c.Target != targets.Command && len(c.Command) > 0:
		bad("client.command", "is only used when client.target is command")
	case c.Target == targets.Command:
		for _, knob := range byoClientKnobs {
			if _, set := x.nodes["client."+knob]; set {
				bad("client."+knob, "a bring-your-own client is given no knobs, only its environment (client.target is command)")
			}
		}
		for i, arg := range c.Command {
			for _, ph := range commandPlaceholderRE.FindAllString(arg, -1) {
				if !slices.Contains(clientCommandPlaceholders, ph) {
					bad(fmt.Sprintf("client.command[%d]", i), "unknown placeholder %s (known: %s)", ph, strings.Join(clientCommandPlaceholders, ", "))
				}
			}
		}
	}
	if c.Target == targets.Naive && c.Cursor == "file" {
		bad("client.cursor", "the naive client keeps no cursor; use the resumable client for a file cursor")
	}
	if c.Backoff.Max < c.Backoff.Initial {
		bad("client.backoff.max", "must be at least backoff.initial (%s), got %s", c.Backoff.Initial, c.Backoff.Max)
	}
	if *c.Backoff.Retries < 0 || *c.Backoff.Retries > 1000 {
		bad("client.backoff.retries", "must be between 0 and 1000, got %d", *c.Backoff.Retries)
	}
}

func (x *Experiment) validateWorkload(bad badFunc, oneOf oneOfFunc) {
	w := x.Workload
	if w.Clients < 1 || w.Clients > MaxClients {
		bad("workload.clients", "must be between 1 and %d (one session each), got %d", MaxClients, w.Clients)
	}
	if len(w.Calls) == 0 {
		bad("workload.calls", "is required: at least one call")
	}
	for i, c := range w.Calls {
		p := fmt.Sprintf("workload.calls[%d]", i)
		builtIn := slices.Contains(Tools, c.Tool)
		if !toolNameRE.MatchString(c.Tool) {
			bad(p+".tool", "must be a tool name (1 to 128 letters, digits, _, - and .): charge or chatty for the built-in servers, else a tool of yours, got %q", c.Tool)
		}
		if !builtIn && toolNameRE.MatchString(c.Tool) && x.Server.Target != targets.Command && x.Server.Target != targets.Image {
			bad(p+".tool", "the %s server has only the tools %s; %q would be a tool of your own server (server.target command or image)",
				x.Server.Target, strings.Join(Tools, " and "), c.Tool)
		}
		if builtIn && c.Duration <= 0 {
			bad(p+".duration", "is required and must be positive for %s (how long the tool runs)", c.Tool)
		}
		if c.Key != "" && !keyRE.MatchString(c.Key) {
			bad(p+".key", "must be an argument path such as order_id or order.id, got %q", c.Key)
		}
		x.validatePlaceholders(p+".args", c.Args, bad)
		for _, key := range sortedArgs(c.Args) {
			if known := toolArgs[c.Tool]; known != nil && !slices.Contains(known, key) {
				bad(p+".args."+key, "unknown argument of %s (known: %s)", c.Tool, strings.Join(known, ", "))
			}
		}
		switch c.Tool {
		case mcpwire.ToolCharge:
			if n, ok := asInt(c.Args["amount_cents"]); !ok || n <= 0 {
				bad(p+".args.amount_cents", "charge needs a positive integer amount_cents")
			}
		case mcpwire.ToolChatty:
			if n, ok := asInt(c.Args["events"]); !ok || n <= 0 || n > 1_000_000 {
				bad(p+".args.events", "chatty needs an integer events between 1 and 1000000")
			}
		}
	}
}

var (
	// toolNameRE is the tool names MCP allows (2025-11-25: 1 to 128 of
	// letters, digits, _, - and .).
	toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// keyRE is an argument path: names joined by dots.
	keyRE         = regexp.MustCompile(`^[^.\s]+(\.[^.\s]+)*$`)
	placeholderRE = regexp.MustCompile(`\{\{[^}]*\}\}`)
	// commandPlaceholderRE is what reads as a placeholder in a command's
	// argument: a lower-case word in braces (JSON, with its quotes, does not).
	commandPlaceholderRE = regexp.MustCompile(`\{[a-z_]+\}`)
	// clientCommandPlaceholders are those a client command's arguments may
	// hold: the MCP endpoint and its parts (targets/byo, ClientEnv.Expand).
	clientCommandPlaceholders = []string{byo.PlaceholderURL, byo.PlaceholderAddr, byo.PlaceholderHost, byo.PlaceholderPort}
)

// validatePlaceholders reports every {{...}} in the strings of an argument
// value that is not one of workload.Placeholders.
func (x *Experiment) validatePlaceholders(path string, v any, bad badFunc) {
	switch a := v.(type) {
	case string:
		for _, ph := range placeholderRE.FindAllString(a, -1) {
			if !slices.Contains(workload.Placeholders, ph) {
				bad(path, "unknown placeholder %s (known: %s)", ph, strings.Join(workload.Placeholders, ", "))
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(a)) {
			x.validatePlaceholders(path+"."+k, a[k], bad)
		}
	case []any:
		for i, e := range a {
			x.validatePlaceholders(fmt.Sprintf("%s[%d]", path, i), e, bad)
		}
	}
}

// toolArgs are the arguments each tool takes from a file; a call's duration
// becomes duration_ms or interval_ms on the wire.
var toolArgs = map[string][]string{
	mcpwire.ToolCharge: {"amount_cents", "idempotency_key", "order_id"},
	mcpwire.ToolChatty: {"events", "interval_ms"},
}

func sortedArgs(args map[string]any) []string {
	return slices.Sorted(maps.Keys(args))
}

func asInt(v any) (int64, bool) {
	switch n := v.(type) {
	case int:
		return int64(n), true
	case int64:
		return n, true
	}
	return 0, false
}

// validateFaults decodes each fault's params into its kind's params
// struct, which the experiment keeps (an absent mapping keeps the zero
// params), and validates the params and the repeat block: the one
// validation a fault gets, since the runner trusts what was loaded.
func (x *Experiment) validateFaults(bad badFunc, ps *problems) {
	for i := range x.Faults {
		f := &x.Faults[i]
		p := fmt.Sprintf("faults[%d]", i)
		params, err := faults.NewParams(f.Kind)
		if err != nil {
			bad(p+".kind", "%v", err)
			continue
		}
		if !x.decodeParams(p+".params", params, ps) {
			continue
		}
		f.Params = params
		if err := params.Validate(); err != nil {
			field, msg := splitField(err.Error())
			bad(join(p+".params", field), "%s", msg)
		}
		switch role := faultRole(params); {
		case role == "redis" && x.Server.EventStore != "redis" && x.Server.TaskStore != "redis":
			bad(p+".params.role", "redis runs only with server.event_store or server.task_store redis (they are %s and %s)", x.Server.EventStore, x.Server.TaskStore)
		case role == "balancer" && x.Balancer == nil:
			bad(p+".params.role", "there is no balancer: add a balancer: block")
		}
		if controlFault(f.Kind) && x.Server.Replicas > 1 {
			bad(p+".kind", "%s reaches one server through its control endpoint, and server.replicas is %d: it would act on replica 1 alone", f.Kind, x.Server.Replicas)
		}
		if n := faultReplica(params); n > x.Server.Replicas {
			bad(p+".params.replica", "the server has %d replica(s) (server.replicas), not %d", x.Server.Replicas, n)
		}
		if r := f.Repeat; r != nil {
			if err := r.Validate(); err != nil {
				field, msg := splitField(err.Error())
				bad(join(p+".repeat", field), "%s", msg)
			}
		}
		if w := f.When; w != nil {
			if err := w.Validate(i, len(x.Faults)); err != nil {
				field, msg := splitField(err.Error())
				bad(join(p+".when", field), "%s", msg)
			}
		}
	}
}

// faultReplica is the server replica a process fault addresses; 0 for
// none.
func faultReplica(p faults.Params) int {
	switch p := p.(type) {
	case *faults.Crash:
		return p.Replica
	case *faults.Restart:
		return p.Replica
	case *faults.Pause:
		return p.Replica
	}
	return 0
}

// faultRole is the role a process fault addresses; "" for none.
func faultRole(p faults.Params) string {
	switch p := p.(type) {
	case *faults.Crash:
		return p.Role
	case *faults.Restart:
		return p.Role
	case *faults.Pause:
		return p.Role
	}
	return ""
}

// splitField splits a params validation message "idle: must be positive"
// into the field and the rest.
func splitField(msg string) (string, string) {
	field, rest, ok := strings.Cut(msg, ": ")
	if !ok || strings.ContainsAny(field, " \t") {
		return "", msg
	}
	return field, rest
}

func (x *Experiment) validateExpect(bad badFunc, oneOf oneOfFunc) {
	e := x.Expect
	if _, set := x.nodes["expect"]; !set {
		bad("expect", "is required: state the verdict this experiment should reach")
		return
	}
	oneOf("expect.verdict", e.Verdict, Verdicts)
	for i, v := range e.Violations {
		if !slices.Contains(check.InvariantIDs, v) {
			bad(fmt.Sprintf("expect.violations[%d]", i), "unknown invariant %q (known: %s)", v, strings.Join(check.InvariantIDs, ", "))
		}
	}
	for i, v := range e.CannotTell {
		switch {
		case !slices.Contains(check.InvariantIDs, v):
			bad(fmt.Sprintf("expect.cannot_tell[%d]", i), "unknown invariant %q (known: %s)", v, strings.Join(check.InvariantIDs, ", "))
		case slices.Contains(e.Violations, v):
			bad(fmt.Sprintf("expect.cannot_tell[%d]", i), "%s is also expected violated", v)
		}
	}
	if e.Verdict == "pass" && len(e.Violations) > 0 {
		bad("expect.violations", "an experiment expected to pass cannot expect violations")
	}
	if e.Verdict == "fail" && e.Violations != nil && len(e.Violations) == 0 {
		bad("expect.violations", "an experiment expected to fail violates something: name it, or leave violations out")
	}
	for name, bound := range e.Figures {
		path := "expect.figures." + name
		if !slices.Contains(check.FigureNames, name) {
			bad(path, "unknown figure (known: %s)", strings.Join(check.FigureNames, ", "))
			continue
		}
		if _, err := check.ParseBound(bound); err != nil {
			bad(path, "%v", err)
		}
	}
}

// Nginx and HAProxy settings of the balancer: block, each valid for its
// kind only.
var (
	nginxOnly   = []string{"proxy_read_timeout", "proxy_buffering", "keepalive_timeout"}
	haproxyOnly = []string{"timeout_server", "timeout_client", "timeout_tunnel"}
)

// applyBalancerDefaults gives the balancer's unset settings their
// defaults; a setting written as 0 is left for validation to refuse.
func (x *Experiment) applyBalancerDefaults() {
	b := x.Balancer
	if b == nil {
		return
	}
	if b.Balance == "" {
		b.Balance = balancer.RoundRobin
	}
	set := func(knob string, d *dur.Duration, v time.Duration) {
		if _, written := x.nodes["balancer."+knob]; !written {
			*d = dur.Duration(v)
		}
	}
	switch b.Kind {
	case balancer.Nginx:
		set("proxy_read_timeout", &b.ProxyReadTimeout, time.Minute)
		set("keepalive_timeout", &b.KeepaliveTimeout, 75*time.Second)
		if b.ProxyBuffering == nil {
			b.ProxyBuffering = new(true)
		}
	case balancer.HAProxy:
		set("timeout_server", &b.TimeoutServer, time.Minute)
		set("timeout_client", &b.TimeoutClient, time.Minute)
	}
}

func (x *Experiment) validateBalancer(bad badFunc, oneOf oneOfFunc) {
	b := x.Balancer
	if b == nil {
		return
	}
	if _, set := x.nodes["balancer.kind"]; !set {
		bad("balancer.kind", "is required: one of %s", strings.Join(balancer.Kinds, ", "))
		return
	}
	oneOf("balancer.kind", b.Kind, balancer.Kinds)
	oneOf("balancer.balance", b.Balance, balancer.Methods)
	other := map[string][]string{balancer.Nginx: haproxyOnly, balancer.HAProxy: nginxOnly}
	for _, knob := range other[b.Kind] {
		if _, set := x.nodes["balancer."+knob]; set {
			bad("balancer."+knob, "is not a setting of %s", b.Kind)
		}
	}
	durations := []struct {
		knob string
		d    dur.Duration
	}{{"proxy_read_timeout", b.ProxyReadTimeout}, {"keepalive_timeout", b.KeepaliveTimeout},
		{"timeout_server", b.TimeoutServer}, {"timeout_client", b.TimeoutClient}, {"timeout_tunnel", b.TimeoutTunnel}}
	for _, k := range durations {
		if _, set := x.nodes["balancer."+k.knob]; set && k.d <= 0 {
			bad("balancer."+k.knob, "must be positive, got %s", k.d)
		}
	}
}

// Node returns the YAML node of a field path, for callers that report
// problems found after loading (nil if the field is not in the file).
func (x *Experiment) Node(path string) *yaml.Node { return x.nodes[path] }

// CheckRuntime reports, as an input error located at server.target, a
// target the named runtime (local or docker) cannot run: target image runs
// only on the docker runtime, which starts the image itself.
//
// A balancer runs only on the local runtime: no image of nginx or HAProxy
// can be pulled on the machines chaosrun runs on, so the docker runtime
// has none to start.
func (x *Experiment) CheckRuntime(runtime string) error {
	ps := &problems{file: x.Path}
	if x.Server.Target == targets.Image && runtime != "docker" {
		line, col := x.at("server.target")
		ps.add(line, col, "server.target", "image runs only on the docker runtime (--runtime docker), not on %s", runtime)
	}
	if x.Server.Listen != "" && runtime == "docker" {
		line, col := x.at("server.listen")
		ps.add(line, col, "server.listen", "a fixed address runs only on the local runtime: in a container the server listens on $CHAOSRUN_LISTEN_ADDR (0.0.0.0:8080), or takes it by {addr} or {port}")
	}
	if x.Server.EventStore == "redis" && runtime != "local" {
		line, col := x.at("server.event_store")
		ps.add(line, col, "server.event_store", "redis runs only on the local runtime (--runtime local), not on %s: the docker runtime has no image of it", runtime)
	}
	if x.Server.TaskStore == "redis" && runtime != "local" {
		line, col := x.at("server.task_store")
		ps.add(line, col, "server.task_store", "redis runs only on the local runtime (--runtime local), not on %s: the docker runtime has no image of it", runtime)
	}
	if x.Balancer != nil && runtime != "local" {
		line, col := x.at("balancer")
		ps.add(line, col, "balancer", "a balancer (%s) runs only on the local runtime (--runtime local), not on %s: the docker runtime has no image of it",
			x.Balancer.Kind, runtime)
	}
	return ps.err()
}

// loopbackAddr says what is wrong with a fixed listen address, or "".
func loopbackAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Sprintf("must be host:port, got %q", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Sprintf("needs a port between 1 and 65535, got %q", port)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Sprintf("must be on loopback (127.0.0.1, ::1 or localhost): the runner reaches the server there, got %q", host)
	}
	return ""
}

// controlFault says whether a fault kind acts through the server's control
// endpoint (one server), not on a process or the proxy.
func controlFault(kind string) bool {
	return kind == faults.KindExpireSession || kind == faults.KindTerminateSession || kind == faults.KindDropTasks
}

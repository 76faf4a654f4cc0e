package spec

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"gopkg.in/yaml.v3"
)

// Accepted values of the enumerated fields.
var (
	Verdicts = []string{"pass", "fail", "inconclusive"}
	// Tools are the built-in tools, whose calls the workload times.
	Tools  = []string{mcp.ToolCharge, mcp.ToolChatty}
	nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// MaxClients bounds workload.clients. Every client is a session with its own
// connections through the proxy, so the bound is about file descriptors and
// memory on one machine: 10,000 clients run on 2 cores and 24 GiB (see the
// section on scale in docs/performance.md), and ten times that is still one machine's worth.
const MaxClients = 100_000

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
	if x.Server.Replicas == 0 {
		x.Server.Replicas = 1
	}
	def(&x.Server.Tasks, TasksOff)
	def(&x.Client.Tasks, TasksOff)
	def(&x.Client.Protocol, mcp.LatestVersion)
	x.applyBalancerDefaults()
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
		if s, ok := catalog.Server(x.Server.Target); ok && s.Tools != nil && !slices.Contains(s.Tools, c.Tool) && toolNameRE.MatchString(c.Tool) {
			bad(p+".tool", "the %s server has only the tools %s; %q would be a tool of your own server (server.target %s)",
				s.Name, strings.Join(s.Tools, " and "), c.Tool, strings.Join(serversWhere(func(s targets.Server) bool { return s.Tools == nil }), " or "))
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
		case mcp.ToolCharge:
			if n, ok := asInt(c.Args["amount_cents"]); !ok || n <= 0 {
				bad(p+".args.amount_cents", "charge needs a positive integer amount_cents")
			}
		case mcp.ToolChatty:
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
	mcp.ToolCharge: {"amount_cents", "idempotency_key", "order_id"},
	mcp.ToolChatty: {"events", "interval_ms"},
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
		bad("balancer.kind", "is required: one of %s", strings.Join(balancerKinds, ", "))
		return
	}
	oneOf("balancer.kind", b.Kind, balancerKinds)
	if b.Kind == balancer.Service {
		x.validateService(bad)
		return
	}
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

// balancerKinds are the balancer's kinds: the programs package balancer
// runs, and a service, which a runtime makes (agent.Balancing).
var balancerKinds = append(slices.Clone(balancer.Kinds), balancer.Service)

// validateService checks a balancer of kind service: a Service balances
// by connection only, either as kube-proxy picks or by client address, and
// has none of nginx's or HAProxy's settings.
func (x *Experiment) validateService(bad badFunc) {
	b := x.Balancer
	if !slices.Contains(balancer.ServiceMethods, b.Balance) {
		bad("balancer.balance", "a service balances %s only, not %q: it sees connections, not requests or their headers",
			strings.Join(balancer.ServiceMethods, " or "), b.Balance)
	}
	for _, knob := range append(slices.Clone(nginxOnly), haproxyOnly...) {
		if _, set := x.nodes["balancer."+knob]; set {
			bad("balancer."+knob, "is not a setting of a service: kube-proxy forwards connections, with no timeouts or buffering of its own")
		}
	}
}

// Node returns the YAML node of a field path, for callers that report
// problems found after loading (nil if the field is not in the file).
func (x *Experiment) Node(path string) *yaml.Node { return x.nodes[path] }

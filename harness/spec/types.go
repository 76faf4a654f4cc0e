package spec

import (
	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets"
	"gopkg.in/yaml.v3"
)

// Experiment is one experiment file.
type Experiment struct {
	Name        string  `yaml:"name"`        // unique, [a-z0-9-]
	Description string  `yaml:"description"` // required: what it shows and why
	Seed        int64   `yaml:"seed"`        // default 1; everything random derives from it
	TimeScale   float64 `yaml:"time_scale"`  // default 1; multiplies every duration
	Server      Server  `yaml:"server"`
	Client      Client  `yaml:"client"`
	// Balancer, if set, puts a real load balancer between the fault proxy
	// and the server (local runtime only).
	Balancer *Balancer `yaml:"balancer"`
	Workload Workload  `yaml:"workload"`
	// Faults is the fault schedule, decoded and validated once, at load:
	// each entry's params: mapping is in its kind's params struct.
	Faults []faults.Spec `yaml:"faults"`
	Expect Expect        `yaml:"expect"`
	// Deadline bounds the whole experiment in real (unscaled) wall time; the
	// default is derived from the schedule.
	Deadline dur.Duration `yaml:"deadline"`

	// Path is the file the experiment came from; Source its bytes.
	Path   string `yaml:"-"`
	Source []byte `yaml:"-"`

	nodes map[string]*yaml.Node // field path → value node, for error positions
}

// Server configures the MCP server under test. Target, Replicas and Tasks
// are the experiment's; every other key of the server: block is a setting
// of the target itself, decoded into the options type the target declares
// (package targets/catalog) over the target's defaults.
type Server struct {
	Target   string `yaml:"target"`   // reference (default) | go-sdk | mcp-go | command | image
	Replicas int    `yaml:"replicas"` // default 1; more need a balancer
	// Tasks is off (default), extension (2026-07-28) or legacy
	// (2025-11-25): which the target runs, it declares.
	Tasks string `yaml:"tasks"`
	// Options are the target's own settings, as the file states them.
	Options targets.Options `yaml:"-"`
}

// Balancer is a real nginx or HAProxy between the fault proxy and the
// server, with the settings users set on theirs, or a Kubernetes Service
// (kind service, made by a runtime that implements agent.Balancing), which
// has no settings but its balance. Its durations scale with the time scale
// like every other; an unset one takes the default below.
type Balancer struct {
	Kind    string `yaml:"kind"`    // nginx | haproxy | service; required
	Balance string `yaml:"balance"` // roundrobin (default) | source | header Mcp-Session-Id

	ProxyReadTimeout dur.Duration `yaml:"proxy_read_timeout"` // nginx; default 60s (nginx's own)
	ProxyBuffering   *bool        `yaml:"proxy_buffering"`    // nginx; default on (nginx's own)
	KeepaliveTimeout dur.Duration `yaml:"keepalive_timeout"`  // nginx; default 75s (nginx's own)

	TimeoutServer dur.Duration `yaml:"timeout_server"` // haproxy; default 1m
	TimeoutClient dur.Duration `yaml:"timeout_client"` // haproxy; default 1m
	TimeoutTunnel dur.Duration `yaml:"timeout_tunnel"` // haproxy; unset: none (server and client apply)
}

// Client configures the MCP client under test. Target, Protocol and Tasks
// are the experiment's (the server and the faults depend on them); every
// other key of the client: block is a setting of the target itself, as for
// Server.
type Client struct {
	Target   string `yaml:"target"`   // resumable (default) | naive | go-sdk | mcp-go | command
	Protocol string `yaml:"protocol"` // default 2025-11-25
	Tasks    string `yaml:"tasks"`    // off (default) | extension (2026-07-28) | legacy (2025-11-25)
	// Options are the target's own settings, as the file states them.
	Options targets.Options `yaml:"-"`
}

// Workload is what the clients do.
type Workload struct {
	Clients int    `yaml:"clients"` // default 1
	Calls   []Call `yaml:"calls"`   // made in order by every client
}

// Call is one tools/call each client makes.
type Call struct {
	Tool     string         `yaml:"tool"`     // charge | chatty (the built-in tools) | any tool of the server under test
	Args     map[string]any `yaml:"args"`     // tool arguments; strings may hold {{call}} and {{client}}
	Duration dur.Duration   `yaml:"duration"` // how long the tool runs (real-world scale); required for the built-in tools
	// Key is the argument path (dot-separated) that tells one logical
	// operation from another; empty: the whole arguments (charge: order_id).
	Key string `yaml:"key"`
	// Idempotent says whether invoking the call again is harmless; absent:
	// the tool decides (chatty is, charge is with an idempotency_key, any
	// other tool is not).
	Idempotent *bool `yaml:"idempotent"`
}

// Expect is what the experiment should conclude.
type Expect struct {
	Verdict    string            `yaml:"verdict"`     // pass | fail | inconclusive
	Violations []string          `yaml:"violations"`  // the exact set of violated invariants
	CannotTell []string          `yaml:"cannot_tell"` // the exact set of invariants the records cannot prove
	Figures    map[string]string `yaml:"figures"`     // figure → bound: 0, ">=1", "<=5", ">0"
}

package spec

import (
	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/internal/dur"
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

// Server configures the MCP server under test.
type Server struct {
	Target          string       `yaml:"target"`             // reference (default) | go-sdk | mcp-go | command | image
	Replicas        int          `yaml:"replicas"`           // default 1; more need a balancer
	RetentionEvents int          `yaml:"retention_events"`   // default 1000; 0 = unbounded
	RetentionAge    dur.Duration `yaml:"retention_age"`      // 0 = no age limit
	OnUnresumable   string       `yaml:"on_unresumable"`     // gone (default) | silent_head
	EventStore      string       `yaml:"event_store"`        // memory (default) | file | redis
	SessionTTL      dur.Duration `yaml:"session_ttl"`        // default 10m; idle TTL
	Keepalive       dur.Duration `yaml:"keepalive"`          // SSE comment interval; 0 = none
	Retry           dur.Duration `yaml:"retry"`              // retry field of 2025-11-25 streams; 0 = 1s
	OnCancel        string       `yaml:"on_cancel"`          // stop (default) | ignore | commit_then_notice
	Tasks           string       `yaml:"tasks"`              // off (default) | extension (2026-07-28) | legacy (2025-11-25; reference, mcp-go)
	TaskStore       string       `yaml:"task_store"`         // memory (default) | file | redis
	TaskTTL         dur.Duration `yaml:"task_ttl"`           // default 1h
	TaskPoll        dur.Duration `yaml:"task_poll_interval"` // default 5s
	Command         []string     `yaml:"command"`            // target: command
	// Listen, for target command, is the fixed loopback host:port the
	// command listens on, for a server that cannot be told its address;
	// "" (the default) gives it a free port. Local runtime only.
	Listen string `yaml:"listen"`
	Image  string `yaml:"image"` // target: image
}

// Balancer is a real nginx or HAProxy between the fault proxy and the
// server, with the settings users set on theirs. Its durations scale with
// the time scale like every other; an unset one takes the default below.
type Balancer struct {
	Kind    string `yaml:"kind"`    // nginx | haproxy; required
	Balance string `yaml:"balance"` // roundrobin (default) | source | header Mcp-Session-Id

	ProxyReadTimeout dur.Duration `yaml:"proxy_read_timeout"` // nginx; default 60s (nginx's own)
	ProxyBuffering   *bool        `yaml:"proxy_buffering"`    // nginx; default on (nginx's own)
	KeepaliveTimeout dur.Duration `yaml:"keepalive_timeout"`  // nginx; default 75s (nginx's own)

	TimeoutServer dur.Duration `yaml:"timeout_server"` // haproxy; default 1m
	TimeoutClient dur.Duration `yaml:"timeout_client"` // haproxy; default 1m
	TimeoutTunnel dur.Duration `yaml:"timeout_tunnel"` // haproxy; unset: none (server and client apply)
}

// Client configures the MCP client under test.
type Client struct {
	Target      string       `yaml:"target"`       // resumable (default) | naive | go-sdk | mcp-go | command
	Command     []string     `yaml:"command"`      // target: command: your client and its arguments
	Cursor      string       `yaml:"cursor"`       // memory (default) | file
	Protocol    string       `yaml:"protocol"`     // default 2025-11-25
	Tasks       string       `yaml:"tasks"`        // off (default) | extension (2026-07-28) | legacy (2025-11-25); resumable only
	Backoff     Backoff      `yaml:"backoff"`      // default {1s, 30s, 8}
	ReadTimeout dur.Duration `yaml:"read_timeout"` // 0 = wait forever on a silent stream
}

// Backoff bounds the client's reconnection.
type Backoff struct {
	Initial dur.Duration `yaml:"initial"`
	Max     dur.Duration `yaml:"max"`
	Retries *int         `yaml:"retries"`
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

package spec

import (
	"maps"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// Overrides are command-line settings that replace an experiment's own.
type Overrides struct {
	Seed      *int64
	TimeScale *float64
}

// Plan is an experiment at run scale: every duration multiplied by the time
// scale and the fault schedule drawn from the seed.
type Plan struct {
	Experiment *Experiment
	Seed       int64
	TimeScale  float64

	Server ServerPlan
	Client ClientPlan
	// Balancer is the load balancer between the fault proxy and the
	// server; nil for none.
	Balancer *BalancerPlan
	// Template is the workload as the client agent takes it: every client
	// makes the same calls (Template.Expand names them client by client).
	Template workload.Template
	Faults   []faults.Injection
	Expect   check.Expectation

	// Scheduled is how long the run would take if nothing went wrong: the
	// scaled call durations of one client plus every scaled fault window.
	Scheduled time.Duration
	// Deadline bounds the whole experiment in wall time.
	Deadline time.Duration
}

// ServerPlan is the server's configuration at run scale.
type ServerPlan struct {
	Target          string
	Replicas        int
	RetentionEvents int
	RetentionAge    time.Duration
	OnUnresumable   string
	EventStore      string
	SessionTTL      time.Duration
	Keepalive       time.Duration
	Retry           time.Duration
	OnCancel        string
	Tasks           string
	TaskStore       string
	TaskTTL         time.Duration
	TaskPoll        time.Duration
	Command         []string
	Listen          string
	Image           string
}

// BalancerPlan is the balancer's configuration at run scale.
type BalancerPlan struct {
	Kind             string
	Balance          string
	ProxyReadTimeout time.Duration
	ProxyBuffering   bool
	KeepaliveTimeout time.Duration
	TimeoutServer    time.Duration
	TimeoutClient    time.Duration
	TimeoutTunnel    time.Duration
}

// ClientPlan is the client's configuration at run scale.
type ClientPlan struct {
	Target      string
	Command     []string
	Cursor      string
	Protocol    string
	Tasks       string
	Backoff     workload.Backoff
	ReadTimeout time.Duration
}

// defaultRetry is the server's retry field when the file sets none, in the
// experiment's real-world time: it scales like every other duration.
const defaultRetry = dur.Duration(time.Second)

// Plan scales the experiment. Overrides replace the file's seed and time
// scale.
func (x *Experiment) Plan(o Overrides) *Plan {
	p := &Plan{Experiment: x, Seed: x.Seed, TimeScale: x.TimeScale}
	if o.Seed != nil {
		p.Seed = *o.Seed
	}
	if o.TimeScale != nil {
		p.TimeScale = *o.TimeScale
	}
	f := p.TimeScale
	s := x.Server
	if s.Retry == 0 {
		s.Retry = defaultRetry
	}
	p.Server = ServerPlan{
		Target: s.Target, Replicas: s.Replicas, RetentionEvents: s.RetentionEvents, RetentionAge: s.RetentionAge.Scale(f),
		OnUnresumable: s.OnUnresumable, EventStore: s.EventStore, SessionTTL: s.SessionTTL.Scale(f),
		Keepalive: s.Keepalive.Scale(f), Retry: s.Retry.Scale(f), OnCancel: s.OnCancel,
		Tasks: s.Tasks, TaskStore: s.TaskStore, TaskTTL: s.TaskTTL.Scale(f), TaskPoll: s.TaskPoll.Scale(f),
		Command: s.Command, Listen: s.Listen, Image: s.Image,
	}
	if b := x.Balancer; b != nil {
		p.Balancer = &BalancerPlan{Kind: b.Kind, Balance: b.Balance, ProxyReadTimeout: b.ProxyReadTimeout.Scale(f),
			ProxyBuffering: b.ProxyBuffering != nil && *b.ProxyBuffering, KeepaliveTimeout: b.KeepaliveTimeout.Scale(f),
			TimeoutServer: b.TimeoutServer.Scale(f), TimeoutClient: b.TimeoutClient.Scale(f), TimeoutTunnel: b.TimeoutTunnel.Scale(f)}
	}
	c := x.Client
	p.Client = ClientPlan{
		Target: c.Target, Command: c.Command, Cursor: c.Cursor, Protocol: c.Protocol, Tasks: c.Tasks, ReadTimeout: c.ReadTimeout.Scale(f),
		Backoff: workload.Backoff{Initial: c.Backoff.Initial.Scale(f), Max: c.Backoff.Max.Scale(f), Retries: *c.Backoff.Retries},
	}
	p.Template = workload.Template{Clients: x.Workload.Clients}
	var perClient time.Duration
	for _, call := range x.Workload.Calls {
		p.Template.Calls = append(p.Template.Calls, workload.Call{Tool: call.Tool, Args: maps.Clone(call.Args), Duration: call.Duration.Scale(f),
			Key: call.Key, Idempotent: call.Idempotent})
		perClient += call.Duration.Scale(f)
	}
	p.Faults = faults.Plan(x.Faults, f, p.Seed)
	p.Scheduled = perClient
	for _, in := range p.Faults {
		p.Scheduled += in.Window
	}
	p.Deadline = x.Deadline.D()
	if p.Deadline == 0 {
		p.Deadline = max(time.Minute, 4*p.Scheduled+20*time.Second)
	}
	p.Expect = x.Expectation()
	return p
}

// Expectation is the expect: block in the checker's terms.
func (x *Experiment) Expectation() check.Expectation {
	e := check.Expectation{Verdict: x.Expect.Verdict, Violations: x.Expect.Violations, CannotTell: x.Expect.CannotTell}
	if len(x.Expect.Figures) > 0 {
		e.Figures = map[string]check.Bound{}
		for name, s := range x.Expect.Figures {
			b, _ := check.ParseBound(s)
			e.Figures[name] = b
		}
	}
	return e
}

package spec

import (
	"maps"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/targets"
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
	Target   string
	Replicas int
	Tasks    string
	// Options are the target's options at run scale (their type is the
	// one the target declares).
	Options targets.Options
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
	Target   string
	Protocol string
	Tasks    string
	// Options are the target's options at run scale.
	Options targets.Options
}

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
	s, c := x.Server, x.Client
	p.Server = ServerPlan{Target: s.Target, Replicas: s.Replicas, Tasks: s.Tasks, Options: scaled(s.Options, f)}
	if b := x.Balancer; b != nil {
		p.Balancer = &BalancerPlan{Kind: b.Kind, Balance: b.Balance, ProxyReadTimeout: b.ProxyReadTimeout.Scale(f),
			ProxyBuffering: b.ProxyBuffering != nil && *b.ProxyBuffering, KeepaliveTimeout: b.KeepaliveTimeout.Scale(f),
			TimeoutServer: b.TimeoutServer.Scale(f), TimeoutClient: b.TimeoutClient.Scale(f), TimeoutTunnel: b.TimeoutTunnel.Scale(f)}
	}
	p.Client = ClientPlan{Target: c.Target, Protocol: c.Protocol, Tasks: c.Tasks, Options: scaled(c.Options, f)}
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

// scaled is o at time scale f; nil for none.
func scaled(o targets.Options, f float64) targets.Options {
	if o == nil {
		return nil
	}
	return o.Scaled(f)
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

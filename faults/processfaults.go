package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
)

// Roles are the values of a process fault's role: the agents it can
// target. The proxy is not one: it holds the fault state itself. balancer
// (nginx, HAProxy) and redis (event_store: redis) are processes the runner
// starts besides the agents; a graceful restart of the balancer drains it
// (nginx's SIGQUIT, HAProxy's soft stop) before it starts again.
var Roles = []string{"server", "client", "ledger", "balancer", "redis"}

func validRole(role string) error {
	return oneOf("role", role, Roles...)
}

// validTarget requires a known role and a replica only of the server.
func validTarget(role string, replica int) error {
	if err := validRole(role); err != nil {
		return err
	}
	switch {
	case replica < 0:
		return field.Errorf("replica", "must be 1 or more (absent: the first), got %d", replica)
	case replica > 0 && role != "server":
		return field.Errorf("replica", "only the server has replicas, not the %s", role)
	}
	return nil
}

// AgentName is the name a process fault addresses: the role itself, or
// "server-2" for replica 2 of the server. Replica 0 (absent) is the role
// as the runner names it, which is replica 1 of the server.
func AgentName(role string, replica int) string {
	if replica == 0 {
		return role
	}
	return fmt.Sprintf("%s-%d", role, replica)
}

// Stopper is what a crash that stays down needs of Processes besides
// Restart: to kill an agent and, later, start it again. Processes that
// cannot (none of chaosrun's runtimes) fail such a crash.
type Stopper interface {
	// Kill ends the agent with SIGKILL (a container kill) and keeps it
	// stopped.
	Kill(ctx context.Context, name string) error
	// Start starts a killed agent again with the same arguments and state.
	Start(ctx context.Context, name string) error
}

// Restart stops the agent in Role and starts it again with the same
// arguments and state: gracefully (SIGTERM, wait) when Graceful, else with
// SIGKILL, like [Crash]. An instant fault: it is not healed.
type Restart struct {
	Role     string `yaml:"role" json:"role"`
	Replica  int    `yaml:"replica" json:"replica,omitempty"` // of the server: 1, 2, ...; absent: the first
	Graceful bool   `yaml:"graceful" json:"graceful"`
}

// Validate requires a known role.
func (p *Restart) Validate() error { return validTarget(p.Role, p.Replica) }

// Target is the agent restarted, which stops.
func (p *Restart) Target() Target {
	return Target{Role: p.Role, Replica: p.Replica, Stops: true, Kills: !p.Graceful}
}

func (p *Restart) window() dur.Duration { return 0 }
func (p *Restart) hold() dur.Duration   { return 0 }

func (p *Restart) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	name := p.Target().Name()
	if err := procs.Restart(ctx, name, p.Graceful); err != nil {
		return nil, "", err
	}
	how := "SIGKILL"
	if p.Graceful {
		how = "graceful stop"
	}
	return nil, fmt.Sprintf("restarted %s (%s)", name, how), nil
}

// Crash kills the agent in Role (or one replica of the server) with
// SIGKILL (a container kill) and starts it again with the same state: at
// once, an instant fault, or after Down, a fault with that window, healed
// by the start. A replica that stays down is one a balancer sends the
// requests elsewhere from.
type Crash struct {
	Role    string       `yaml:"role" json:"role"`
	Replica int          `yaml:"replica" json:"replica,omitempty"` // of the server: 1, 2, ...; absent: the first
	Down    dur.Duration `yaml:"down" json:"down,omitempty"`       // how long it stays down; absent: started at once
}

// Validate requires a known role (a duration is never negative).
func (p *Crash) Validate() error { return validTarget(p.Role, p.Replica) }

// Target is the agent killed, which stops.
func (p *Crash) Target() Target {
	return Target{Role: p.Role, Replica: p.Replica, Stops: true, Kills: true}
}

func (p *Crash) window() dur.Duration { return p.Down }
func (p *Crash) hold() dur.Duration   { return p.Down }

func (p *Crash) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	name := p.Target().Name()
	if p.Down == 0 {
		if err := procs.Restart(ctx, name, false); err != nil {
			return nil, "", err
		}
		return nil, fmt.Sprintf("killed %s and started it again", name), nil
	}
	st, ok := procs.(Stopper)
	if !ok {
		return nil, "", fmt.Errorf("crash %s: down: this run cannot keep an agent stopped", name)
	}
	if err := st.Kill(ctx, name); err != nil {
		return nil, "", err
	}
	return func(ctx context.Context) error { return st.Start(ctx, name) },
		fmt.Sprintf("killed %s, down for %s", name, p.Down), nil
}

// Pause freezes the agent in Role (SIGSTOP, a container pause) for For,
// then thaws it. Overlapping pauses of one role thaw when the last ends.
type Pause struct {
	Role    string       `yaml:"role" json:"role"`
	Replica int          `yaml:"replica" json:"replica,omitempty"` // of the server: 1, 2, ...; absent: the first
	For     dur.Duration `yaml:"for" json:"for"`
}

// Validate requires a known role and a positive window.
func (p *Pause) Validate() error {
	if err := validTarget(p.Role, p.Replica); err != nil {
		return err
	}
	return positive("for", p.For)
}

// Target is the agent frozen.
func (p *Pause) Target() Target { return Target{Role: p.Role, Replica: p.Replica, Freezes: true} }

func (p *Pause) window() dur.Duration { return p.For }
func (p *Pause) hold() dur.Duration   { return p.For }

func (p *Pause) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	name := p.Target().Name()
	return r.shared(ctx, "pause "+name,
		func(ctx context.Context) error { return procs.Pause(ctx, name) },
		func(ctx context.Context) error { return procs.Resume(ctx, name) },
		"paused "+name)
}

// ExpireSession makes the server drop its live sessions now, as an idle TTL
// would: later requests on them get 404. It posts to the server's control
// endpoint ({control}/control/expire). An instant fault.
type ExpireSession struct{}

// Validate accepts the empty parameters.
func (p *ExpireSession) Validate() error { return nil }

// Control is the expire action, on sessions.
func (p *ExpireSession) Control() Control { return Control{Action: "expire", Sessions: true} }

func (p *ExpireSession) window() dur.Duration { return 0 }
func (p *ExpireSession) hold() dur.Duration   { return 0 }

func (p *ExpireSession) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	return r.control(ctx, p.Control().Action, "expired")
}

// TerminateSession makes the server end its live sessions with a close
// event on their streams ({control}/control/terminate). An instant fault.
type TerminateSession struct{}

// Validate accepts the empty parameters.
func (p *TerminateSession) Validate() error { return nil }

// Control is the terminate action, on sessions.
func (p *TerminateSession) Control() Control { return Control{Action: "terminate", Sessions: true} }

func (p *TerminateSession) window() dur.Duration { return 0 }
func (p *TerminateSession) hold() dur.Duration   { return 0 }

func (p *TerminateSession) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	return r.control(ctx, p.Control().Action, "terminated")
}

// DropTasks makes the server's task store forget every task now
// ({control}/control/drop_tasks): a task the client polls is then not
// found, as if its poll had reached a replica without it. An instant fault.
type DropTasks struct{}

// Validate accepts the empty parameters.
func (p *DropTasks) Validate() error { return nil }

// Control is the drop_tasks action, on the task store.
func (p *DropTasks) Control() Control { return Control{Action: "drop_tasks", Tasks: true} }

func (p *DropTasks) window() dur.Duration { return 0 }
func (p *DropTasks) hold() dur.Duration   { return 0 }

func (p *DropTasks) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	body, err := r.post(ctx, p.Control().Action)
	if err != nil {
		return nil, "", err
	}
	var v struct {
		Tasks *[]string `json:"tasks"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Tasks == nil {
		return nil, "", fmt.Errorf("control drop_tasks: answer is not {\"tasks\":[...]}")
	}
	switch n := len(*v.Tasks); n {
	case 0:
		return nil, "no task to drop", nil
	case 1:
		return nil, "dropped 1 task: " + (*v.Tasks)[0], nil
	default:
		return nil, fmt.Sprintf("dropped %d tasks: %s", n, strings.Join(*v.Tasks, ", ")), nil
	}
}

// sessionsDetail describes the sessions a control call acted on.
func sessionsDetail(verb string, ids []string) string {
	switch len(ids) {
	case 0:
		return "no live session to act on"
	case 1:
		return fmt.Sprintf("%s 1 session: %s", verb, ids[0])
	}
	return fmt.Sprintf("%s %d sessions: %s", verb, len(ids), strings.Join(ids, ", "))
}

package faults

import (
	"context"
	"fmt"
	"strings"

	"github.com/chaosrun/chaosrun/internal/dur"
)

// Roles of the agents a process fault can target. The proxy is not one:
// it holds the fault state itself.
var roles = []string{"server", "client", "ledger"}

func validRole(role string) error {
	return oneOf("role", role, roles...)
}

// Restart stops the agent in Role and starts it again with the same
// arguments and state: gracefully (SIGTERM, wait) when Graceful, else with
// SIGKILL, like [Crash]. An instant fault: it is not healed.
type Restart struct {
	Role     string `yaml:"role" json:"role"`
	Graceful bool   `yaml:"graceful" json:"graceful"`
}

// Validate requires a known role.
func (p *Restart) Validate() error { return validRole(p.Role) }

func (p *Restart) window() dur.Duration { return 0 }
func (p *Restart) hold() dur.Duration   { return 0 }

func (p *Restart) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	if err := procs.Restart(ctx, p.Role, p.Graceful); err != nil {
		return nil, "", err
	}
	how := "SIGKILL"
	if p.Graceful {
		how = "graceful stop"
	}
	return nil, fmt.Sprintf("restarted %s (%s)", p.Role, how), nil
}

// Crash kills the agent in Role with SIGKILL (a container kill) and starts
// it again with the same state. An instant fault: it is not healed.
type Crash struct {
	Role string `yaml:"role" json:"role"`
}

// Validate requires a known role.
func (p *Crash) Validate() error { return validRole(p.Role) }

func (p *Crash) window() dur.Duration { return 0 }
func (p *Crash) hold() dur.Duration   { return 0 }

func (p *Crash) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	if err := procs.Restart(ctx, p.Role, false); err != nil {
		return nil, "", err
	}
	return nil, fmt.Sprintf("killed %s and started it again", p.Role), nil
}

// Pause freezes the agent in Role (SIGSTOP, a container pause) for For,
// then thaws it. Overlapping pauses of one role thaw when the last ends.
type Pause struct {
	Role string       `yaml:"role" json:"role"`
	For  dur.Duration `yaml:"for" json:"for"`
}

// Validate requires a known role and a positive window.
func (p *Pause) Validate() error {
	if err := validRole(p.Role); err != nil {
		return err
	}
	return positive("for", p.For)
}

func (p *Pause) window() dur.Duration { return p.For }
func (p *Pause) hold() dur.Duration   { return p.For }

func (p *Pause) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	procs, err := r.processes()
	if err != nil {
		return nil, "", err
	}
	return r.shared(ctx, "pause "+p.Role,
		func(ctx context.Context) error { return procs.Pause(ctx, p.Role) },
		func(ctx context.Context) error { return procs.Resume(ctx, p.Role) },
		"paused "+p.Role)
}

// ExpireSession makes the server drop its live sessions now, as an idle TTL
// would: later requests on them get 404. It posts to the server's control
// endpoint ({control}/control/expire). An instant fault.
type ExpireSession struct{}

// Validate accepts the empty parameters.
func (p *ExpireSession) Validate() error { return nil }

func (p *ExpireSession) window() dur.Duration { return 0 }
func (p *ExpireSession) hold() dur.Duration   { return 0 }

func (p *ExpireSession) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	return r.control(ctx, "expire", "expired")
}

// TerminateSession makes the server end its live sessions with a close
// event on their streams ({control}/control/terminate). An instant fault.
type TerminateSession struct{}

// Validate accepts the empty parameters.
func (p *TerminateSession) Validate() error { return nil }

func (p *TerminateSession) window() dur.Duration { return 0 }
func (p *TerminateSession) hold() dur.Duration   { return 0 }

func (p *TerminateSession) inject(ctx context.Context, r *run, _ Injection) (heal, string, error) {
	return r.control(ctx, "terminate", "terminated")
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

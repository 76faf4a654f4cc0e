package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
)

// processes lets the fault injector restart and pause agents by role. The
// runner adds the client while the injector already runs (faults due at the
// start are in place before the client starts), so it is locked. The zero
// value is empty and ready.
type processes struct {
	mu    sync.Mutex
	procs map[string]agent.Process
}

func (p *processes) add(role string, proc agent.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.procs == nil {
		p.procs = map[string]agent.Process{}
	}
	p.procs[role] = proc
}

func (p *processes) get(role string) (agent.Process, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	proc, ok := p.procs[role]
	if !ok {
		return nil, fmt.Errorf("%w: %s", agent.ErrNotRunning, role)
	}
	return proc, nil
}

func (p *processes) Restart(ctx context.Context, role string, graceful bool) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Restart(ctx, graceful)
}

func (p *processes) Pause(ctx context.Context, role string) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Pause(ctx)
}

func (p *processes) Resume(ctx context.Context, role string) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Resume(ctx)
}

// dueTimeout bounds the wait for the faults due at the workload's start.
const dueTimeout = 2 * time.Minute

// dueTracker waits until every injection planned for the workload's start
// has been injected (or has failed).
type dueTracker struct {
	mu      sync.Mutex
	pending map[[2]int]bool
	done    chan struct{}
}

func newDueTracker(plan []faults.Injection) *dueTracker {
	d := &dueTracker{pending: map[[2]int]bool{}, done: make(chan struct{})}
	for _, in := range plan {
		if in.At == 0 {
			d.pending[[2]int{in.Index, in.Repeat}] = true
		}
	}
	if len(d.pending) == 0 {
		close(d.done)
	}
	return d
}

func (d *dueTracker) seen(ev faults.Event) {
	if ev.Phase != faults.PhaseInjected && ev.Phase != faults.PhaseFailed {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := [2]int{ev.Index, ev.Repeat}
	if d.pending[key] {
		delete(d.pending, key)
		if len(d.pending) == 0 {
			close(d.done)
		}
	}
}

func (d *dueTracker) wait(ctx context.Context) error {
	// A graceful restart at the start may wait out a drain.
	t := time.NewTimer(dueTimeout)
	defer t.Stop()
	select {
	case <-d.done:
		return nil
	case <-t.C:
		return fmt.Errorf("not injected within %s", dueTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// serverSpec is the server agent of a plan, writing to the ledger at
// ledgerURL; for target image, the image the runtime runs in its place.
func serverSpec(p *spec.Plan, ledgerURL string) agent.Spec {
	s := agent.Spec{Role: agent.RoleServer, Port: 8080, LedgerURL: ledgerURL, Args: serverArgs(p)}
	if p.Server.Target == targets.Image {
		s.Image = p.Server.Image
	}
	return s
}

// serverArgs are the server agent's flags for a plan. A bring-your-own
// target gets only what its environment is made of: the knobs of the
// built-in servers mean nothing to it, and an image is given none at all.
func serverArgs(p *spec.Plan) []string {
	s := p.Server
	args := []string{"--target", s.Target}
	switch s.Target {
	case targets.Command:
		for _, c := range s.Command {
			args = append(args, "--command="+c) // "=": an argument may start with a dash
		}
		return args
	case targets.Image:
		return args
	}
	return append(args,
		"--retention-events", strconv.Itoa(s.RetentionEvents), "--retention-age", s.RetentionAge.String(),
		"--on-unresumable", s.OnUnresumable, "--event-store", s.EventStore, "--store-path", "events.log",
		"--session-ttl", s.SessionTTL.String(), "--keepalive", s.Keepalive.String(), "--retry", s.Retry.String(),
	)
}

// clientArgs are the client agent's flags for a plan.
func clientArgs(p *spec.Plan, endpoint string) []string {
	c := p.Client
	tmpl, _ := json.Marshal(p.Template) // plain values always marshal
	return []string{
		"--target", c.Target, "--endpoint", endpoint, "--workload-template", string(tmpl),
		"--history", historyState, "--cursor", c.Cursor, "--cursor-dir", "cursors", "--protocol", c.Protocol,
		"--backoff-initial", c.Backoff.Initial.String(), "--backoff-max", c.Backoff.Max.String(),
		"--backoff-retries", strconv.Itoa(c.Backoff.Retries), "--read-timeout", c.ReadTimeout.String(),
		"--seed", strconv.FormatInt(p.Seed, 10),
	}
}

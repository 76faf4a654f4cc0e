package proxy

import (
	"context"
	"errors"
	"time"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/wire"
)

// Group is the proxy agents of a run whose clients are spread over several
// (each agent carries a share, see wire.Share), as one for the injector: it
// arms triggers and reports heals to every agent, has every agent's taps
// refuse and accept, and a trigger fires when it first fires in any agent.
// A fault is injected once, into every agent's proxy, so the run keeps one
// fault log on one clock. A Group of one is that agent. It implements
// faults.Triggers and faults.Edges.
type Group []*Client

// Arm arms the triggers in every agent.
func (g Group) Arm(ctx context.Context, ts []trigger.Trigger) error {
	return g.each(func(c *Client) error { return c.Arm(ctx, ts) })
}

// Healed tells every agent that fault index healed at atUS.
func (g Group) Healed(ctx context.Context, index int, atUS int64) error {
	return g.each(func(c *Client) error { return c.Healed(ctx, index, atUS) })
}

// Refuse has the tap of edge refuse new connections in every agent.
func (g Group) Refuse(ctx context.Context, edge wire.Edge) error {
	return g.each(func(c *Client) error { return c.Refuse(ctx, edge) })
}

// Accept has the tap of edge listen again in every agent.
func (g Group) Accept(ctx context.Context, edge wire.Edge) error {
	return g.each(func(c *Client) error { return c.Accept(ctx, edge) })
}

// Reset resets every connection through every agent's proxy now: the
// window runs from the first agent's start to the last one's end.
func (g Group) Reset(ctx context.Context) (conns int, fromUS, toUS int64, err error) {
	first := true
	err = g.each(func(c *Client) error {
		n, from, to, err := c.Reset(ctx)
		if err != nil {
			return err
		}
		if first || from < fromUS {
			fromUS, first = from, false
		}
		conns, toUS = conns+n, max(toUS, to)
		return nil
	})
	return conns, fromUS, toUS, err
}

// StartResets starts the resets id in every agent, and returns when the
// first began.
func (g Group) StartResets(ctx context.Context, id string, after time.Duration) (fromUS int64, err error) {
	first := true
	err = g.each(func(c *Client) error {
		from, err := c.StartResets(ctx, id, after)
		if err == nil && (first || from < fromUS) {
			fromUS, first = from, false
		}
		return err
	})
	return fromUS, err
}

// StopResets stops the resets id in every agent, and returns how many
// connections they reset in all and when the last stopped.
func (g Group) StopResets(ctx context.Context, id string) (conns int, toUS int64, err error) {
	err = g.each(func(c *Client) error {
		n, to, err := c.StopResets(ctx, id)
		conns, toUS = conns+n, max(toUS, to)
		return err
	})
	return conns, toUS, err
}

// Fired waits until trigger id fires in any agent and returns the first
// such firing (its wire_n is the firing agent's, which the merged
// wire.jsonl keeps). It fails only when no agent can fire it any more, or
// ctx ends.
func (g Group) Fired(ctx context.Context, id string) (trigger.Firing, error) {
	if len(g) == 1 {
		return g[0].Fired(ctx, id)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		f   trigger.Firing
		err error
	}
	results := make(chan result, len(g))
	for _, c := range g {
		go func() {
			f, err := c.Fired(ctx, id)
			results <- result{f, err}
		}()
	}
	var last result
	for range g {
		r := <-results
		if r.err == nil && r.f.Err == "" {
			return r.f, nil
		}
		last = r
	}
	return last.f, last.err
}

// Close stops following every agent's firings.
func (g Group) Close() error {
	return g.each(func(c *Client) error { return c.Close() })
}

func (g Group) each(op func(*Client) error) error {
	if len(g) == 0 {
		return errors.New("proxy: no proxy agent")
	}
	var errs []error
	for _, c := range g {
		errs = append(errs, op(c))
	}
	return errors.Join(errs...)
}

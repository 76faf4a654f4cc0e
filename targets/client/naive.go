package client

import (
	"context"
	"fmt"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// Naive runs one logical client the way the incident's client did: any
// broken stream or non-2xx answer abandons the session (no DELETE),
// initializes a new one and invokes the call again, up to Backoff.Retries
// times with Backoff.Initial between attempts, after which the call fails.
// It keeps no cursor and never sends Last-Event-ID. See [Run].
func Naive(ctx context.Context, opts workload.Options, c workload.Client) error {
	a, err := newAgent(TargetNaive, opts, c)
	if err != nil {
		return err
	}
	a.record(history.Record{Kind: history.KindClientStart, Target: TargetNaive, Detail: "fresh"})
	n := &naive{agent: a}
	return a.finish(n.run(ctx))
}

type naive struct{ *agent }

func (n *naive) run(ctx context.Context) error {
	for _, call := range n.client.Calls {
		if err := n.call(ctx, call); err != nil {
			return err
		}
	}
	return nil
}

// call makes attempts until one has an outcome or the retries run out. A
// call whose ctx ends before it has an outcome is recorded unknown.
func (n *naive) call(ctx context.Context, call workload.Call) error {
	var last *stream
	for attempt := 1; ; attempt++ {
		tr, err := n.attempt(ctx, call, attempt)
		if tr.stream != nil {
			last = tr.stream
		}
		switch {
		case err != nil:
		case tr.out != nil:
			return nil
		case attempt > n.opts.Backoff.Retries:
			if last == nil {
				last = &stream{call: call}
			}
			n.outcomeRecord(last, &outcome{kind: history.KindFail, reason: fmt.Sprintf("gave up after %d attempts: %s", attempt, tr.why)})
			return nil
		default:
			err = runclock.Sleep(ctx, n.opts.Backoff.Initial)
		}
		if err != nil {
			if last != nil {
				n.outcomeRecord(last, unknownOutcome(fmt.Sprintf("stopped: %v", err)))
			}
			return err
		}
	}
}

// try is what one attempt came to: an outcome (recorded), or why it broke.
type try struct {
	stream *stream
	out    *outcome
	why    string
}

// attempt makes one attempt at a call on the current session, opening one
// if there is none, and abandons the session when the attempt breaks.
func (n *naive) attempt(ctx context.Context, call workload.Call, attempt int) (try, error) {
	if !n.conn.live {
		if err := n.openSession(ctx); err != nil {
			if ctx.Err() != nil {
				return try{}, ctx.Err()
			}
			return try{why: err.Error()}, nil
		}
	}
	s, err := n.newStream(call, attempt)
	if err != nil {
		return try{}, err
	}
	n.invokeRecord(s)
	var cl Close
	x, err := n.conn.post(ctx, s.req)
	if err == nil {
		var out *outcome
		out, cl, _, err = n.read(ctx, s, x)
		if out != nil {
			n.outcomeRecord(s, out)
			return try{stream: s, out: out}, nil
		}
	} else if ctx.Err() == nil {
		cl, err = Close{Err: err}, nil
	}
	if err != nil {
		return try{stream: s}, err
	}
	n.breakRecord(s, cl)
	n.dropSession("abandoned")
	return try{stream: s, why: cl.Class()}, nil
}

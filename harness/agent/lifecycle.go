package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrClosed is returned by a Lifecycle's Start and Restart once it is
// closed.
var ErrClosed = errors.New("agent closed")

// Incarnation is one run of an agent as a runtime started it: a child
// process, or one start of a container. Runtimes implement it; a Lifecycle
// keeps the books across an agent's incarnations.
type Incarnation interface {
	// Exited is closed once the incarnation has exited (and, where the
	// runtime copies its output, once that output has reached the log).
	Exited() <-chan struct{}
	// ExitCode is how the incarnation exited, -1 if unknown. It is read
	// only after Exited is closed.
	ExitCode() int
	// Ready returns once the incarnation serves (a serving agent printed
	// its URL); at once for an agent that serves nothing. It fails if the
	// incarnation exits first, is not ready in the runtime's time, or ctx
	// ends; it need not stop the incarnation then: the Lifecycle kills it.
	Ready(ctx context.Context) error
	// Stop ends the incarnation, thawing it first if it is paused:
	// gracefully (SIGTERM, then SIGKILL after the runtime's grace, or
	// sooner when ctx ends) or not (SIGKILL at once). It returns once the
	// incarnation has exited, or with an error if it cannot make sure.
	Stop(ctx context.Context, graceful bool) error
	// Pause freezes the incarnation and returns once it is frozen, so a
	// fault logged as injected is in effect; Resume thaws it.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
}

// Launcher starts a new incarnation of an agent and returns once it runs,
// before it is ready. When it fails, nothing of that incarnation runs.
type Launcher func(ctx context.Context) (Incarnation, error)

// Lifecycle is one agent across its incarnations. It implements Process's
// Restart, Stop, Pause, Resume and Wait over a runtime's Launcher, so that
// every runtime tells an agent's own exits from the harness's the same way.
//
// An exit is planned when the harness caused it (Stop, Restart, Close) or
// when it ended a start that failed (Start reports it); every other exit is
// the agent's own and is reported to Wait exactly once. Own exits wait for
// Wait in order, oldest first, for as long as it takes: none is dropped and
// no goroutine blocks on one nobody reads. The queue cannot grow without
// bound, because every entry is one incarnation, and incarnations are made
// only by Start and Restart.
type Lifecycle struct {
	role   string
	launch Launcher

	mu        sync.Mutex
	cur       *incarnation // nil before the first start
	starts    int          // incarnations launched
	closed    bool
	exits     []int         // own exits Wait has not read, oldest first
	exitAdded chan struct{} // closed, and replaced, when exits grows
}

// incarnation is the Lifecycle's record of one incarnation.
type incarnation struct {
	Incarnation
	planned bool // the harness ended it; guarded by Lifecycle.mu
}

// NewLifecycle returns the lifecycle of the agent of the given role (used
// in errors), whose incarnations launch starts. Nothing runs until Start.
func NewLifecycle(role string, launch Launcher) *Lifecycle {
	return &Lifecycle{role: role, launch: launch, exitAdded: make(chan struct{})}
}

// Start launches an incarnation and waits until it is ready. An incarnation
// that fails to get ready is killed; its exit is Start's error, never
// Wait's news.
func (l *Lifecycle) Start(ctx context.Context) error {
	l.mu.Lock()
	closed := l.closed
	l.mu.Unlock()
	if closed {
		return ErrClosed
	}
	inc, err := l.launch(ctx)
	if err != nil {
		return err
	}
	in := &incarnation{Incarnation: inc}
	l.mu.Lock()
	if l.closed { // Close ran while this one was launched, and did not see it
		in.planned = true
		l.mu.Unlock()
		_ = inc.Stop(context.Background(), false)
		return ErrClosed
	}
	l.cur = in
	l.starts++
	l.mu.Unlock()
	if err := inc.Ready(ctx); err != nil {
		l.mu.Lock()
		in.planned = true
		closed := l.closed
		l.mu.Unlock()
		_ = inc.Stop(context.Background(), false)
		if closed {
			return ErrClosed
		}
		return err
	}
	// Watched only once ready: an exit before that is Ready's error. One
	// after it is seen here even if it came first, as Exited is closed.
	go l.watch(in)
	return nil
}

// watch reports the incarnation's exit to Wait unless it was planned.
func (l *Lifecycle) watch(in *incarnation) {
	<-in.Exited()
	l.mu.Lock()
	defer l.mu.Unlock()
	if in.planned {
		return
	}
	l.exits = append(l.exits, in.ExitCode())
	close(l.exitAdded)
	l.exitAdded = make(chan struct{})
}

// Stop ends the current incarnation as a planned exit (see
// Incarnation.Stop). It is idempotent: with nothing running it does nothing.
func (l *Lifecycle) Stop(ctx context.Context, graceful bool) error {
	l.mu.Lock()
	in := l.cur
	if in == nil || isClosed(in.Exited()) {
		// Already gone: an exit of its own stays one, even if the
		// harness meant to stop it now.
		l.mu.Unlock()
		return nil
	}
	in.planned = true
	l.mu.Unlock()
	return in.Stop(ctx, graceful)
}

// Restart stops the current incarnation (see Stop) and starts a new one.
func (l *Lifecycle) Restart(ctx context.Context, graceful bool) error {
	if err := l.Stop(ctx, graceful); err != nil {
		return fmt.Errorf("restart %s: %w", l.role, err)
	}
	if err := l.Start(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", l.role, err)
	}
	return nil
}

// Close ends the agent for good: it kills the current incarnation and
// returns once it has exited, kills any incarnation a Start under way
// launches, and makes every later Start and Restart fail with ErrClosed.
// It is idempotent.
func (l *Lifecycle) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	return l.Stop(ctx, false)
}

// Running returns the current incarnation and how many starts it is the
// last of (1 for the first), or ErrNotRunning.
func (l *Lifecycle) Running() (Incarnation, int, error) {
	l.mu.Lock()
	in, n := l.cur, l.starts
	l.mu.Unlock()
	if in == nil || isClosed(in.Exited()) {
		return nil, 0, ErrNotRunning
	}
	return in.Incarnation, n, nil
}

// running returns the current incarnation, or ErrNotRunning.
func (l *Lifecycle) running() (Incarnation, error) {
	l.mu.Lock()
	in := l.cur
	l.mu.Unlock()
	if in == nil || isClosed(in.Exited()) {
		return nil, ErrNotRunning
	}
	return in.Incarnation, nil
}

// Pause freezes the current incarnation (see Incarnation.Pause).
func (l *Lifecycle) Pause(ctx context.Context) error {
	in, err := l.running()
	if err != nil {
		return err
	}
	return in.Pause(ctx)
}

// Resume thaws the current incarnation.
func (l *Lifecycle) Resume(ctx context.Context) error {
	in, err := l.running()
	if err != nil {
		return err
	}
	return in.Resume(ctx)
}

// Wait returns the exit code of the oldest own exit it has not returned
// yet, waiting for one until ctx ends.
func (l *Lifecycle) Wait(ctx context.Context) (int, error) {
	for {
		l.mu.Lock()
		if len(l.exits) > 0 {
			code := l.exits[0]
			l.exits = l.exits[1:]
			l.mu.Unlock()
			return code, nil
		}
		added := l.exitAdded
		l.mu.Unlock()
		select {
		case <-added:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

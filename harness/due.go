package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
)

// dueTimeout bounds the wait for the faults due at the workload's start.
const dueTimeout = 2 * time.Minute

// dueTracker waits until every injection planned for the workload's start
// has been injected (or has failed). An injection gated by a protocol
// trigger is never due at the start: it waits for the wire.
type dueTracker struct {
	mu      sync.Mutex
	pending map[[2]int]bool
	done    chan struct{}
}

func newDueTracker(plan []faults.Injection) *dueTracker {
	d := &dueTracker{pending: map[[2]int]bool{}, done: make(chan struct{})}
	for _, in := range plan {
		if in.At == 0 && in.Trigger == nil {
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

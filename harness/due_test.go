package harness

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
)

func TestDueTrackerWaitsForEveryInjectionAtStart(t *testing.T) {
	plan := []faults.Injection{{Index: 0, Kind: "idle_timeout"}, {Index: 1, Kind: "reset", At: time.Second},
		{Index: 2, Kind: "latency"}}
	d := newDueTracker(plan)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	d.seen(faults.Event{Phase: faults.PhaseInjected, Index: 0})
	d.seen(faults.Event{Phase: faults.PhaseHealed, Index: 2}) // not an injection
	require.ErrorIs(t, d.wait(ctx), context.DeadlineExceeded, "injection 2 is still due")
	d.seen(faults.Event{Phase: faults.PhaseFailed, Index: 2})
	require.NoError(t, d.wait(context.Background()))
	require.NoError(t, newDueTracker(nil).wait(context.Background()), "nothing due: no wait")
}

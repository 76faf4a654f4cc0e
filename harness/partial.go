package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/results"
)

// salvageTimeout bounds the work of keeping an interrupted experiment's
// records: stopping its agents and exporting the ledger.
const salvageTimeout = 30 * time.Second

// salvage keeps what an interrupted experiment recorded, so `chaosrun
// report` can judge it: it marks the folder partial, stops the agents and
// gathers the history and ledger as collect does (on a context of its own,
// the run's being cancelled), and judges what there is. Without a client
// the workload never began, and there is nothing to judge.
func (e *experiment) salvage(cause error) (*results.ExperimentResult, error) {
	reason := fmt.Sprintf("interrupted at %.2fs on the run's clock, before the workload finished", e.clock.Now().Seconds())
	if err := results.SavePartial(e.dir, reason); err != nil {
		return nil, errors.Join(cause, err)
	}
	if e.procs.of(agent.RoleClient) == nil {
		return nil, fmt.Errorf("interrupted before the workload started: %w", cause)
	}
	ctx, cancel := context.WithTimeout(context.Background(), salvageTimeout)
	defer cancel()
	e.partial = reason
	if err := e.collect(ctx); err != nil {
		return nil, fmt.Errorf("interrupted, and its records could not be gathered: %w", errors.Join(cause, err))
	}
	return e.judge(e.clock.Now())
}

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// PartialFile marks an experiment folder whose records are incomplete: the
// run was interrupted before the experiment's workload finished. Its one
// field, reason, says when and why.
const PartialFile = "partial.json"

// salvageTimeout bounds the work of keeping an interrupted experiment's
// records: stopping its agents and exporting the ledger.
const salvageTimeout = 30 * time.Second

type partialMark struct {
	Reason string `json:"reason"`
}

// salvage keeps what an interrupted experiment recorded, so `chaosrun
// report` can judge it: it marks the folder partial, stops the agents and
// gathers the history and ledger as collect does (on a context of its own,
// the run's being cancelled), and judges what there is. Without a client
// the workload never began, and there is nothing to judge.
func (e *experiment) salvage(cause error) (*ExperimentResult, error) {
	reason := fmt.Sprintf("interrupted at %.2fs on the run's clock, before the workload finished", e.clock.Now().Seconds())
	if err := savePartial(e.dir, reason); err != nil {
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

func savePartial(dir string, reason string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, PartialFile), partialMark{Reason: reason})
}

// loadPartial returns the reason an experiment folder is partial, or "".
func loadPartial(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, PartialFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var m partialMark
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, PartialFile), err)
	}
	return m.Reason, nil
}

// markPartial makes a partial experiment's result unmet, saying why first.
func markPartial(res *ExperimentResult, reason string) {
	res.Partial, res.Met = reason, false
	res.Reasons = append([]string{"partial results: " + reason}, res.Reasons...)
}

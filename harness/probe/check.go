package probe

import (
	"fmt"
	"path/filepath"

	"github.com/chaosrun/chaosrun/harness/lab"
)

// Status is a check's outcome.
type Status string

// The statuses. A measurement that is neither right nor wrong in itself
// (a retention window, a TTL) is Measured; what the records cannot show is
// CannotTell, with why, never a guess.
const (
	Pass       Status = "pass"
	Fail       Status = "fail"
	CannotTell Status = "cannot_tell"
	Measured   Status = "measured"
)

// Mark is the status as the terminal table shows it.
func (s Status) Mark() string {
	switch s {
	case Pass:
		return "✓"
	case Fail:
		return "✗"
	case Measured:
		return "="
	}
	return "cannot tell"
}

// The seed's conditions, as the scorecard groups its checks.
const (
	CondRetention  = "retention window"
	CondCursor     = "unhonourable cursor"
	CondSession    = "session lifetime"
	CondResumption = "resumption"
	CondStreamEnd  = "stream close"
	CondReissue    = "re-issue"
	CondRevision   = "revision"
	CondClient     = "client"
)

// Check is one line of the scorecard.
type Check struct {
	// ID is stable (used by baselines and checks.json); Scenario groups the
	// checks of one revision (or of the client) as the conformance suite's
	// scenarios do.
	ID        string `json:"id"`
	Scenario  string `json:"scenario"`
	Condition string `json:"condition"`
	Protocol  string `json:"protocol,omitempty"`
	Name      string `json:"name"`
	Status    Status `json:"status"`
	// Figure is the measurement, where the check is one ("50 events").
	Figure string `json:"figure,omitempty"`
	// Evidence is one line saying what the records showed; Why says why
	// the check cannot tell, when it cannot.
	Evidence string `json:"evidence"`
	Why      string `json:"why,omitempty"`
	// Experiments are the folders, under the probe's experiments folder,
	// of the runs the check rests on.
	Experiments []string `json:"experiments,omitempty"`
	// Values holds the measurement in machine-readable form.
	Values map[string]any `json:"values,omitempty"`
}

func (c *Check) cite(outcomes ...*lab.Outcome) {
	for _, o := range outcomes {
		if o != nil {
			c.Experiments = append(c.Experiments, filepath.ToSlash(filepath.Join(lab.ExperimentsDir, o.Folder)))
		}
	}
}

// cannot makes a check that cannot tell, saying why.
func cannot(id, name, why string, outcomes ...*lab.Outcome) Check {
	c := Check{ID: id, Name: name, Status: CannotTell, Why: why, Evidence: why}
	c.cite(outcomes...)
	return c
}

// verdictOf makes a pass or fail check.
func verdictOf(id, name string, ok bool, evidence string, outcomes ...*lab.Outcome) Check {
	st := Fail
	if ok {
		st = Pass
	}
	c := Check{ID: id, Name: name, Status: st, Evidence: evidence}
	c.cite(outcomes...)
	return c
}

// measured makes a measurement check.
func measured(id, name, figure, evidence string, values map[string]any, outcomes ...*lab.Outcome) Check {
	c := Check{ID: id, Name: name, Status: Measured, Figure: figure, Evidence: evidence, Values: values}
	c.cite(outcomes...)
	return c
}

// harnessFailed says why an outcome told nothing.
func harnessFailed(o *lab.Outcome) string {
	if o == nil {
		return "the experiment did not run"
	}
	if o.Verdict == nil {
		return fmt.Sprintf("the harness failed on %s: %s", o.Folder, o.Error)
	}
	return ""
}

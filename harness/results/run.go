package results

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
)

// Run is the outcome of one invocation over a set of experiments.
type Run struct {
	ID       string `json:"id"`
	Dir      string `json:"dir"`
	Runtime  string `json:"runtime"`
	Parallel int    `json:"parallel"`
	// Repeat is how many times each experiment was asked to run; the
	// counts of what happened are in Tallies, from the results themselves.
	Repeat int `json:"repeat,omitempty"`
	// Shard is the share of the experiments this run took ("2/4"), empty
	// for all of them.
	Shard string `json:"shard,omitempty"`
	// Merged names the run folders a merged run joins (see Merge).
	Merged  []string  `json:"merged,omitempty"`
	Started time.Time `json:"started"`
	WallMS  int64     `json:"wall_ms"`
	// Interrupted is set when the run was cancelled (Ctrl-C, SIGTERM)
	// before every experiment finished.
	Interrupted bool                `json:"interrupted,omitempty"`
	Results     []*ExperimentResult `json:"experiments"`
	// Tallies counts, experiment by experiment, the runs that met their
	// expectation and the outcomes seen, when some experiment ran more
	// than once (see Run.TallyRuns); it is written from Results.
	Tallies []Tally `json:"tallies,omitempty"`
}

// ExperimentResult is one experiment's outcome. Verdict is nil when the
// harness failed (Error says why).
type ExperimentResult struct {
	Name string `json:"name"`
	// Repetition numbers the runs of a repeated experiment from 1; 0 when
	// it ran once.
	Repetition int            `json:"repetition,omitempty"`
	Seed       int64          `json:"seed"`
	Dir        string         `json:"dir"`
	Expected   string         `json:"expected"`
	Verdict    *check.Verdict `json:"-"`
	Met        bool           `json:"met"`
	Reasons    []string       `json:"reasons,omitempty"`
	Error      string         `json:"error,omitempty"`
	// Partial says why the experiment's records are incomplete (see
	// PartialFile); empty when they are whole.
	Partial   string        `json:"partial,omitempty"`
	Wall      time.Duration `json:"-"`
	Scheduled time.Duration `json:"-"`
	// Saved, for an experiment judged again offline, says how the verdict
	// judged now compares with its saved verdict.json (SavedSame,
	// SavedDiffers, SavedAbsent); empty when nothing was compared.
	Saved string `json:"-"`
}

// How a verdict judged again compares with the saved one
// (ExperimentResult.Saved).
const (
	SavedSame    = "same"
	SavedDiffers = "differs"
	SavedAbsent  = "absent"
)

// Label names the result in tables: the experiment's name, and for a
// repetition its number ("reset-storm #3").
func (x *ExperimentResult) Label() string {
	if x.Repetition == 0 {
		return x.Name
	}
	return fmt.Sprintf("%s #%d", x.Name, x.Repetition)
}

// Outcome classifies a run for its exit code.
type Outcome int

// Outcomes, from best to worst.
const (
	AllMet       Outcome = iota // every expectation met
	Inconclusive                // some experiment was inconclusive where a verdict was expected
	NotMet                      // some expectation not met
	HarnessError                // the harness failed on some experiment
)

// Outcome is the worst outcome of the run's experiments.
func (r *Run) Outcome() Outcome {
	worst := AllMet
	for _, x := range r.Results {
		o := AllMet
		switch {
		case x.Verdict == nil:
			o = HarnessError
		case x.Met:
		case x.Partial != "": // cut short: the verdict says nothing of the fault
			o = NotMet
		case x.Verdict.Verdict == check.Inconclusive:
			o = Inconclusive
		default:
			o = NotMet
		}
		worst = max(worst, o)
	}
	return worst
}

func NewRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

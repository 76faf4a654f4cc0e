package check

import (
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// Input is everything one experiment recorded. Times in the records are
// microseconds on the run's base clock.
type Input struct {
	History []history.Record     // history.jsonl, in file order
	Ledger  []sideeffects.Record // ledger.jsonl
	Faults  []faults.Entry       // faults.jsonl
	// Wall is how long the run took; Scheduled is how long its schedule
	// said it would (scaled tool durations plus scaled fault windows). Both
	// are supplied by the runner and reported as figures only.
	Wall      time.Duration
	Scheduled time.Duration

	_ struct{} // keyed literals only: the input grows
}

// Judge checks the fault_hit assumption and every invariant, and computes
// the figures. The verdict is inconclusive when the assumption does not
// hold, whatever the invariants say (they are still reported); otherwise it
// is fail when some invariant is violated and pass when none is.
func Judge(in Input) Verdict {
	acc := Account(in.Ledger, in.History, nil)
	order := timeOrder(in.History)
	v := Verdict{
		Violations:  []string{},
		Assumptions: []Result{faultHit(in, order, acc.Calls)},
		Invariants: []Result{
			noDuplicates(&acc),
			noSilentLoss(&acc),
			noFork(&acc),
			noOrphans(&acc),
			outcomesResolved(&acc),
		},
		Figures: figures(in, order, &acc),
	}
	for _, r := range v.Invariants {
		if !r.Held() {
			v.Violations = append(v.Violations, r.ID)
		}
	}
	switch {
	case !v.Assumptions[0].Held():
		v.Verdict = Inconclusive
	case len(v.Violations) > 0:
		v.Verdict = Fail
	default:
		v.Verdict = Pass
	}
	return v
}

package results

import (
	"path/filepath"
	"slices"
	"strings"
)

// HarnessErrorOutcome is the verdict a Tally gives a run the harness failed
// on (no verdict).
const HarnessErrorOutcome = "harness error"

// Tally is how a repeated experiment came out over its runs, counted from
// the runs' results (their recorded verdicts), never from how many were
// asked for: a run that is missing is not counted.
type Tally struct {
	Name     string `json:"name"`
	Expected string `json:"expected"`
	Runs     int    `json:"runs"`
	Met      int    `json:"met"`
	// Outcomes are the distinct outcomes seen, most frequent first.
	Outcomes []OutcomeCount `json:"outcomes"`
}

// OutcomeCount is one distinct outcome of a repeated experiment: a verdict
// with the invariants it violated, or a harness error.
type OutcomeCount struct {
	Verdict    string   `json:"verdict"`
	Violations []string `json:"violations"`
	Partial    bool     `json:"partial,omitempty"`
	Count      int      `json:"count"`
	Met        bool     `json:"met"` // whether these runs met the expectation
	// Runs are the runs' results folders, relative to the run's folder.
	Runs []string `json:"runs"`
}

// Label is the outcome as the summary writes it: "fail: no_session_fork".
func (o OutcomeCount) Label() string {
	s := o.Verdict
	if o.Partial {
		s += " (partial)"
	}
	if len(o.Violations) > 0 {
		s += ": " + strings.Join(o.Violations, ", ")
	}
	return s
}

// Repeated reports whether some experiment of the run ran more than once.
func (r *Run) Repeated() bool {
	seen := map[string]bool{}
	for _, x := range r.Results {
		if seen[x.Name] {
			return true
		}
		seen[x.Name] = true
	}
	return false
}

// TallyRuns counts every experiment's runs, in the order the experiments
// first appear in the results.
func (r *Run) TallyRuns() []Tally {
	var out []Tally
	at := map[string]int{}
	for _, x := range r.Results {
		i, ok := at[x.Name]
		if !ok {
			i = len(out)
			at[x.Name] = i
			out = append(out, Tally{Name: x.Name, Expected: x.Expected})
		}
		t := &out[i]
		t.Runs++
		if x.Met {
			t.Met++
		}
		o := outcomeOf(x)
		o.Runs = []string{r.rel(x.Dir)}
		j := slices.IndexFunc(t.Outcomes, func(c OutcomeCount) bool { return c.key() == o.key() })
		if j < 0 {
			t.Outcomes = append(t.Outcomes, o)
			continue
		}
		t.Outcomes[j].Count++
		t.Outcomes[j].Runs = append(t.Outcomes[j].Runs, o.Runs...)
	}
	for i := range out {
		slices.SortStableFunc(out[i].Outcomes, func(a, b OutcomeCount) int { return b.Count - a.Count })
	}
	return out
}

func outcomeOf(x *ExperimentResult) OutcomeCount {
	o := OutcomeCount{Verdict: HarnessErrorOutcome, Violations: []string{}, Partial: x.Partial != "", Count: 1, Met: x.Met}
	if x.Verdict != nil {
		o.Verdict = x.Verdict.Verdict
		o.Violations = append(o.Violations, x.Verdict.Violations...)
	}
	return o
}

// key tells outcomes apart: verdict, violations, partial, and whether they
// met the expectation (a verdict that matches can still miss on figures).
func (o OutcomeCount) key() string {
	k := o.Label()
	if !o.Met {
		k += " (not met)"
	}
	return k
}

// rel is dir relative to the run's folder, with forward slashes.
func (r *Run) rel(dir string) string {
	if rel, err := filepath.Rel(r.Dir, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return filepath.ToSlash(rel)
	}
	return filepath.ToSlash(dir)
}

package groundtruth

import (
	"fmt"
	"slices"
	"strings"
)

// Kinds of disagreement between a verdict and the truth.
const (
	// FalseVerdict: the verdict claims what the truth contradicts (an
	// invariant held or not judged where the programs' records show it
	// violated, violated where they show it held, a pass over a fault that
	// never hit (a pass rests on the invariants it names held; one it
	// cannot tell is no claim), workload_error or not against the
	// server's own refusal).
	FalseVerdict = "false verdict"
	// FalseInconclusive: the verdict is inconclusive while the programs'
	// records show the fault hit a call in flight.
	FalseInconclusive = "false inconclusive"
	// FalseFigure: a figure outside what the truth allows (a lower bound
	// above the truth).
	FalseFigure = "false figure"
	// HiddenExit: a bring-your-own client exited non-zero and the verdict
	// does not say so, or says another code.
	HiddenExit = "client exit"
	// DanglingEvidence: evidence that names a record the run does not hold.
	DanglingEvidence = "evidence"
)

// Kinds lists the kinds of disagreement in the order the summary counts
// them.
var Kinds = []string{FalseVerdict, FalseInconclusive, FalseFigure, HiddenExit, DanglingEvidence}

// Disagreement is one claim of a verdict the truth contradicts.
type Disagreement struct {
	Run     string // the experiment folder, with its runtime
	Kind    string
	What    string // the invariant, figure or field
	Oracle  string // what the programs' records say, and from where
	Checker string // what the verdict says
}

// figurePairs are the truth's figures and the verdict's figures they are
// held against (summed when several).
var figurePairs = []struct {
	truth   string
	checker []string
}{
	{"calls", []string{"calls"}},
	{"calls_ok", []string{"calls_ok"}},
	{FigureCallsNotOK, []string{"calls_failed", "calls_unknown", "calls_unresolved"}},
	{"duplicates", []string{"duplicates"}},
	{"events_emitted", []string{"events_emitted"}},
	{"events_received", []string{"events_received"}},
	{FigureEventsMissing, []string{"events_lost_silent", "events_lost_surfaced", "events_unread"}},
	{"events_lost_surfaced", []string{"events_lost_surfaced"}},
	{"sessions", []string{"sessions"}},
	{"forks", []string{"forks"}},
	{"orphaned_results", []string{"orphaned_results"}},
}

// Compare holds a verdict against the truth of its run and returns every
// disagreement.
func Compare(run string, t Truth, v Verdict) []Disagreement {
	var out []Disagreement
	add := func(kind, what, oracle, checker string) {
		out = append(out, Disagreement{Run: run, Kind: kind, What: what, Oracle: oracle, Checker: checker})
	}
	claim := fmt.Sprintf("verdict %s %v", v.Verdict, v.Violations)
	switch {
	case t.WorkloadError.Status == StatusHeld && v.Verdict != VerdictWorkloadError:
		add(FalseVerdict, "verdict", t.WorkloadError.Why, claim)
	case t.WorkloadError.Status == StatusViolated && v.Verdict == VerdictWorkloadError:
		add(FalseVerdict, "verdict", t.WorkloadError.Why, claim)
	}
	if v.Verdict == VerdictWorkloadError {
		return append(out, exitDisagreements(run, t, v)...)
	}
	fh := v.Results[AssumptionFaultHit]
	switch {
	case v.Verdict == "inconclusive" && t.FaultHit.Status == StatusHeld:
		add(FalseInconclusive, AssumptionFaultHit, "the fault hit: "+t.FaultHit.Why, claim+": "+fh.Summary)
	case v.Verdict == "pass" && t.FaultHit.Status == StatusViolated:
		add(FalseVerdict, AssumptionFaultHit, "no fault hit a call: "+t.FaultHit.Why, claim)
	case fh.Status == StatusHeld && t.FaultHit.Status == StatusViolated:
		add(FalseVerdict, AssumptionFaultHit, "no fault hit a call: "+t.FaultHit.Why, "held: "+fh.Summary)
	}
	ids := make([]string, 0, len(t.Invariants))
	for id := range t.Invariants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		truth := t.Invariants[id]
		got, judged := v.Results[id]
		status := got.Status
		if !judged {
			status = StatusNotJudged
		}
		switch {
		case truth.Status == StatusViolated && (status == StatusHeld || status == StatusNotJudged):
			add(FalseVerdict, id, "violated: "+truth.Why, status+": "+got.Summary)
		case truth.Status == StatusHeld && status == StatusViolated:
			add(FalseVerdict, id, "held: "+truth.Why, "violated: "+got.Summary+evidenceHint(got))
		}
	}
	for _, p := range figurePairs {
		r := t.Figures[p.truth]
		if !r.Known {
			continue
		}
		f, ok := sumFigures(v, p.checker)
		if !ok {
			continue
		}
		name := strings.Join(p.checker, " + ")
		switch {
		case f.Kind == FigureCannotTell:
		case f.Kind == FigureLowerBound && f.Value > r.Hi:
			add(FalseFigure, name, fmt.Sprintf("%s (%s)", r, r.Source), fmt.Sprintf("at least %d", f.Value))
		case f.Kind == FigureUpperBound && f.Value < r.Lo:
			add(FalseFigure, name, fmt.Sprintf("%s (%s)", r, r.Source), fmt.Sprintf("at most %d", f.Value))
		case f.Kind != FigureLowerBound && f.Kind != FigureUpperBound && !r.Contains(f.Value):
			add(FalseFigure, name, fmt.Sprintf("%s (%s)", r, r.Source), fmt.Sprint(f.Value)+kindNote(f))
		}
	}
	return append(out, exitDisagreements(run, t, v)...)
}

// exitDisagreements holds the verdict's account of a bring-your-own
// client's exit against the runtime's.
func exitDisagreements(run string, t Truth, v Verdict) []Disagreement {
	if t.ClientExit == nil || *t.ClientExit == 0 {
		return nil
	}
	died := fmt.Sprintf("the client exited %d", *t.ClientExit)
	if t.ClientDied != "" {
		died += ": " + t.ClientDied
	}
	switch {
	case v.ClientExit == nil:
		return []Disagreement{{Run: run, Kind: HiddenExit, What: "client exit", Oracle: died, Checker: "the verdict names no client exit"}}
	case *v.ClientExit != *t.ClientExit:
		return []Disagreement{{Run: run, Kind: HiddenExit, What: "client exit", Oracle: died, Checker: fmt.Sprintf("exit %d", *v.ClientExit)}}
	}
	return nil
}

// sumFigures adds the named figures of v; a lower (upper) bound among them
// makes the sum one, a figure the checker cannot tell, or bounds both ways,
// make it one the checker cannot tell. ok is false when v has none of them.
func sumFigures(v Verdict, names []string) (Figure, bool) {
	var sum Figure
	found := false
	for _, n := range names {
		f, ok := v.Figures[n]
		if !ok {
			continue
		}
		found = true
		switch {
		case f.Kind == FigureCannotTell,
			f.Kind == FigureLowerBound && sum.Kind == FigureUpperBound, f.Kind == FigureUpperBound && sum.Kind == FigureLowerBound:
			return Figure{Kind: FigureCannotTell}, true
		case f.Kind == FigureLowerBound, f.Kind == FigureUpperBound:
			sum.Kind = f.Kind
		case sum.Kind == "":
			sum.Kind = f.Kind
		}
		sum.Value += f.Value
	}
	return sum, found
}

func kindNote(f Figure) string {
	if f.Kind == "" {
		return ""
	}
	return " (" + strings.ReplaceAll(f.Kind, "_", " ") + ")"
}

// evidenceHint is the first line of a result's evidence, to show what it
// rests on.
func evidenceHint(j Judged) string {
	if len(j.Evidence) == 0 {
		return ""
	}
	return "; evidence: " + j.Evidence[0]
}

package groundtruth

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// Tally counts a corpus's runs and the runs with each kind of disagreement.
type Tally struct {
	Runs   int
	ByKind map[string]int // runs with at least one disagreement of the kind
	// Others counts the runs with a program nobody here wrote, and
	// OtherPrograms those programs.
	Others        int
	OtherPrograms []string
}

// Count tallies runs.
func Count(runs []Run) Tally {
	t := Tally{Runs: len(runs), ByKind: map[string]int{}}
	others := map[string]bool{}
	for _, r := range runs {
		other := false
		for _, bin := range []string{r.Server, r.Client} {
			if p, ok := program(bin); ok && p.Author != AuthorChaosrun {
				other, others[bin] = true, true
			}
		}
		if other {
			t.Others++
		}
		kinds := map[string]bool{}
		for _, d := range r.Disagreements {
			kinds[d.Kind] = true
		}
		for k := range kinds {
			t.ByKind[k]++
		}
	}
	t.OtherPrograms = slices.Sorted(maps.Keys(others))
	return t
}

// Clean reports whether no run disagrees with its truth in any way.
func (t Tally) Clean() bool {
	for _, n := range t.ByKind {
		if n > 0 {
			return false
		}
	}
	return true
}

// Summary is the corpus's one line: "N runs, M false verdicts, K false
// inconclusives", then the runs with false figures, hidden client exits and
// evidence that points nowhere.
func (t Tally) Summary() string {
	return fmt.Sprintf("%d runs, %d false verdicts, %d false inconclusives, %d with false figures, %d with a client's exit unreported, %d with evidence that points nowhere",
		t.Runs, t.ByKind[FalseVerdict], t.ByKind[FalseInconclusive], t.ByKind[FalseFigure], t.ByKind[HiddenExit], t.ByKind[DanglingEvidence])
}

// WriteReport writes the summary line, a table of the runs (programs,
// faults, verdict, disagreements) and a table of every disagreement with
// what the programs' records say and what the verdict says.
func WriteReport(w io.Writer, runs []Run) error {
	t := Count(runs)
	var b strings.Builder
	fmt.Fprintf(&b, "ground-truth corpus: %s\n\n%d of the runs with a program nobody here wrote (%d programs: %s)\n\n",
		t.Summary(), t.Others, len(t.OtherPrograms), strings.Join(t.OtherPrograms, ", "))
	b.WriteString("| run | server | client | faults | verdict | disagreements |\n|---|---|---|---|---|---:|\n")
	for _, r := range runs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s %s | %d |\n", r.Label(), r.Server, r.Client, strings.Join(r.Faults, ", "),
			r.Verdict.Verdict, strings.Join(r.Verdict.Violations, ", "), len(r.Disagreements))
	}
	var all []Disagreement
	for _, r := range runs {
		all = append(all, r.Disagreements...)
	}
	if len(all) > 0 {
		b.WriteString("\n| run | kind | what | the programs' records say | the verdict says |\n|---|---|---|---|---|\n")
		for _, d := range all {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", d.Run, d.Kind, d.What, cell(d.Oracle), cell(d.Checker))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func cell(s string) string { return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s) }

// WriteTruths writes, run by run, what the programs' own records establish
// (the fault, every figure with its source, every invariant with why, and
// what the records cannot establish) beside the verdict's figure.
func WriteTruths(w io.Writer, runs []Run) error {
	var b strings.Builder
	for _, r := range runs {
		t := r.Truth
		fmt.Fprintf(&b, "## %s\n\nserver %s, client %s, faults %s; verdict %s %v\n\n", r.Label(), r.Server, r.Client,
			strings.Join(r.Faults, ", "), r.Verdict.Verdict, r.Verdict.Violations)
		fmt.Fprintf(&b, "- fault hit: %s (%s)\n", orNone(t.FaultHit.Status), t.FaultHit.Why)
		if t.WorkloadError.Known() {
			fmt.Fprintf(&b, "- workload error: %s (%s)\n", t.WorkloadError.Status, t.WorkloadError.Why)
		}
		if t.ClientExit != nil {
			fmt.Fprintf(&b, "- client exit: %d %s\n", *t.ClientExit, t.ClientDied)
		}
		for _, p := range figurePairs {
			f, _ := sumFigures(r.Verdict, p.checker)
			fmt.Fprintf(&b, "- %s: %s (%s); verdict %d%s\n", p.truth, t.Figures[p.truth], t.Figures[p.truth].Source, f.Value, kindNote(f))
		}
		for _, id := range []string{NoDuplicateSideEffects, NoSilentEventLoss, NoSessionFork, NoOrphanedResults, OutcomesResolved, ClientSurvived} {
			fmt.Fprintf(&b, "- %s: %s (%s); verdict %s\n", id, orNone(t.Invariants[id].Status), t.Invariants[id].Why, r.Verdict.Results[id].Status)
		}
		for _, l := range t.Limits {
			fmt.Fprintf(&b, "- cannot establish: %s\n", l)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func orNone(status string) string {
	if status == "" {
		return "not established"
	}
	return status
}

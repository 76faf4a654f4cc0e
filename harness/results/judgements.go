package results

import (
	"fmt"
	"io"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
)

// writeJudgements writes, after the summary's table, how every invariant
// of every judged experiment came out and which account judged it: held,
// violated, cannot tell or not judged, by the ledger, the wire or both,
// with any disagreement between the two.
func writeJudgements(w io.Writer, run *Run) {
	fmt.Fprintf(w, "\n### Invariants, and the account that judged each\n\n")
	fmt.Fprintf(w, "| experiment | %s |\n", strings.Join(check.InvariantIDs, " | "))
	fmt.Fprintf(w, "|---%s|\n", strings.Repeat("|---", len(check.InvariantIDs)))
	for _, r := range run.Results {
		if r.Verdict == nil {
			continue
		}
		cells := make([]string, 0, len(check.InvariantIDs))
		for _, id := range check.InvariantIDs {
			res, _ := r.Verdict.Result(id)
			cells = append(cells, judgement(res))
		}
		fmt.Fprintf(w, "| %s | %s |\n", r.Label(), strings.Join(cells, " | "))
	}
}

// writeLimits writes, for every experiment whose records could not prove
// something, what: the invariants that cannot be told and why, the
// figures that are bounds or cannot be told, and how a client of the
// user's own ended.
func writeLimits(w io.Writer, run *Run) {
	header := false
	for _, r := range run.Results {
		lines := limits(r.Verdict)
		if len(lines) == 0 {
			continue
		}
		if !header {
			fmt.Fprintf(w, "\n### What the records cannot prove, and how clients of your own ended\n\n")
			header = true
		}
		fmt.Fprintf(w, "- **%s**\n", r.Label())
		for _, l := range lines {
			fmt.Fprintf(w, "  - %s\n", l)
		}
	}
}

// limits lists, for writeLimits, what one verdict could not prove and how
// its client of the user's own ended.
func limits(v *check.Verdict) []string {
	if v == nil {
		return nil
	}
	var out []string
	for _, id := range v.CannotTell {
		res, _ := v.Result(id)
		out = append(out, fmt.Sprintf("%s: cannot tell: %s", id, res.Summary))
	}
	type claim struct{ kind, why string }
	var order []claim
	figures := map[claim][]string{}
	for _, name := range check.FigureNames {
		p, ok := v.Provenance[name]
		if !ok || p.Kind == check.Derived {
			continue
		}
		got, _ := v.Figures.Value(name)
		c := claim{p.Kind, p.Why}
		if figures[c] == nil {
			order = append(order, c)
		}
		figures[c] = append(figures[c], fmt.Sprintf("%s = %d", name, got))
	}
	for _, c := range order {
		out = append(out, fmt.Sprintf("%s %s: %s", strings.Join(figures[c], ", "), kindPhrase(c.kind, len(figures[c])), c.why))
	}
	if e := v.ClientExit; e != nil {
		line := "the client ended: " + e.Status
		if e.TUS > 0 {
			line += fmt.Sprintf(" at %.3fs", float64(e.TUS)/1e6)
		}
		if len(e.Tail) > 0 {
			line += fmt.Sprintf("; its last output: `%s`", strings.Join(e.Tail[max(0, len(e.Tail)-3):], " | "))
		}
		out = append(out, line)
	}
	return out
}

// kindPhrase says what n figures of a provenance kind are: "is a lower
// bound", "are upper bounds", "cannot be told".
func kindPhrase(kind string, n int) string {
	switch {
	case kind == check.Unknown:
		return "cannot be told"
	case n == 1 && kind == check.UpperBound:
		return "is an upper bound"
	case n == 1:
		return "is a " + statusWord(kind)
	}
	return "are " + statusWord(kind) + "s"
}

// judgement renders one result as a summary cell: "violated (ledger)",
// "held (both)", "not judged", or a disagreement in bold.
func judgement(r check.Result) string {
	switch {
	case r.Status == check.NotJudged:
		return "not judged"
	case r.Disagreement != "":
		return fmt.Sprintf("**%s (ledger); wire disagrees**", statusWord(r.Status))
	case r.Unseen != "":
		return fmt.Sprintf("%s (ledger; beyond the wire's sight)", statusWord(r.Status))
	}
	return fmt.Sprintf("%s (%s)", statusWord(r.Status), r.Account)
}

func statusWord(status string) string { return strings.ReplaceAll(status, "_", " ") }

// judgementLines lists every invariant with its status and account, one a
// line, for a JUnit test case's output.
func judgementLines(v *check.Verdict) string {
	var b strings.Builder
	for _, r := range v.Invariants {
		fmt.Fprintf(&b, "%s: %s\n", r.ID, judgement(r))
	}
	return b.String()
}

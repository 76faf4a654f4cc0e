package harness

import (
	"fmt"
	"io"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
)

// writeJudgements writes, after the summary's table, how every invariant
// of every judged experiment came out and which account judged it: held,
// violated or not judged, by the ledger, the wire or both, with any
// disagreement between the two.
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

package harness

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
)

// Files of a run folder.
const (
	RunFile     = "run.json"
	SummaryFile = "summary.md"
	JUnitFile   = "junit.xml"
)

func writeReports(run *Run) error {
	if err := writeJSON(filepath.Join(run.Dir, RunFile), run); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(run.Dir, SummaryFile), func(w io.Writer) error { return WriteSummary(w, run) }); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(run.Dir, JUnitFile), func(w io.Writer) error { return WriteJUnit(w, run) }); err != nil {
		return err
	}
	return writeIndex(run)
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteSummary writes the run as a markdown table a person reads at a
// glance, followed by what each unmet expectation got wrong.
func WriteSummary(w io.Writer, run *Run) error {
	met := 0
	for _, r := range run.Results {
		if r.Met {
			met++
		}
	}
	fmt.Fprintf(w, "# chaosrun run %s\n\n", run.ID)
	fmt.Fprintf(w, "Runtime %s, parallel %d, wall %.1fs. **%d of %d expectations met.**\n\n",
		run.Runtime, run.Parallel, float64(run.WallMS)/1000, met, len(run.Results))
	if run.Interrupted {
		fmt.Fprint(w, "**Interrupted.** Experiments marked partial stopped before their workload finished; `chaosrun report` judges what they recorded.\n\n")
	}
	fmt.Fprintln(w, "| experiment | expected | verdict | met | violated | duplicates | lost silently | lost in gaps | forks | orphaned | unknown | wall / scheduled |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range run.Results {
		if r.Verdict == nil {
			fmt.Fprintf(w, "| %s | %s | harness error | no | | | | | | | | |\n", r.Name, r.Expected)
			continue
		}
		f := r.Verdict.Figures
		ratio := "-"
		if f.ScheduledMS > 0 {
			ratio = fmt.Sprintf("%.1fs / %.1fs (%.2f)", float64(f.WallMS)/1000, float64(f.ScheduledMS)/1000, float64(f.WallMS)/float64(f.ScheduledMS))
		}
		verdict := r.Verdict.Verdict
		if r.Partial != "" {
			verdict += " (partial)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %s |\n", r.Name, r.Expected, verdict,
			yesNo(r.Met), strings.Join(r.Verdict.Violations, ", "), f.Duplicates, f.EventsLostSilent, f.EventsLostSurfaced,
			f.Forks, f.OrphanedResults, f.CallsUnknown, ratio)
	}
	writeJudgements(w, run)
	for _, r := range run.Results {
		if r.Met {
			continue
		}
		fmt.Fprintf(w, "\n## %s: expectation not met\n\n", r.Name)
		if r.Error != "" {
			fmt.Fprintf(w, "- harness error: %s\n", r.Error)
		}
		for _, reason := range r.Reasons {
			fmt.Fprintf(w, "- %s\n", reason)
		}
		fmt.Fprintf(w, "- results: `%s`\n", r.Dir)
	}
	return nil
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "**no**"
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes one test case per experiment: an unmet expectation is
// a failure listing the violated invariants and their evidence, a harness
// error is an error.
func WriteJUnit(w io.Writer, run *Run) error {
	s := junitSuite{Name: "chaosrun." + run.Runtime, Tests: len(run.Results), Time: secs(run.WallMS)}
	for _, r := range run.Results {
		c := junitCase{Name: r.Name, Classname: "chaosrun." + run.Runtime, SystemOut: "results: " + r.Dir,
			Time: secs(r.Wall.Milliseconds())}
		switch {
		case r.Verdict == nil:
			s.Errors++
			c.Error = &junitProblem{Message: r.Error, Type: "harness"}
		case !r.Met:
			s.Failures++
			c.Failure = &junitProblem{Message: strings.Join(r.Reasons, "; "), Type: r.Verdict.Verdict, Text: evidence(r.Verdict)}
		}
		if r.Verdict != nil {
			c.Time = secs(r.Verdict.Figures.WallMS)
			c.SystemOut += "\n" + judgementLines(r.Verdict)
		}
		s.Cases = append(s.Cases, c)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{s}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

func evidence(v *check.Verdict) string {
	var b strings.Builder
	for _, r := range append(append([]check.Result(nil), v.Assumptions...), v.Invariants...) {
		if r.Held() || r.Status == check.NotJudged {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", r.ID, r.Summary)
		for _, e := range r.Evidence {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

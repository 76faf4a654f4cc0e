package results

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
)

// ExperimentFile is the experiment as run, in its result folder besides the
// checker's files.
const ExperimentFile = "experiment.yaml"

// The files of a run's folder.
const (
	RunFile     = "run.json"
	SummaryFile = "summary.md"
	JUnitFile   = "junit.xml"
)

// WriteReports writes the run's summary, JUnit report, run.json and pages
// into its folder.
func WriteReports(run *Run) error {
	run.Tallies = nil
	if run.Repeated() {
		run.Tallies = run.TallyRuns()
	}
	if err := WriteJSON(filepath.Join(run.Dir, RunFile), run); err != nil {
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
	fmt.Fprintf(w, "Runtime %s, parallel %d, wall %.1fs%s. **%d of %d expectations met.**\n\n",
		run.Runtime, run.Parallel, float64(run.WallMS)/1000, runScope(run), met, len(run.Results))
	if line := savedLine(run); line != "" {
		fmt.Fprintln(w, line+"\n")
	}
	if run.Repeated() {
		writeTallies(w, run)
	}
	if run.Interrupted {
		fmt.Fprint(w, "**Interrupted.** Experiments marked partial stopped before their workload finished; `chaosrun report` judges what they recorded.\n\n")
	}
	fmt.Fprintln(w, "| experiment | expected | verdict | met | violated | duplicates | lost silently | lost in gaps | forks | orphaned | unknown | wall / scheduled |")
	fmt.Fprintln(w, "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range run.Results {
		if r.Verdict == nil {
			fmt.Fprintf(w, "| %s | %s | harness error | no | | | | | | | | |\n", r.Label(), r.Expected)
			continue
		}
		f := r.Verdict.Figures
		ratio := "-"
		if f.ScheduledMS > 0 {
			ratio = fmt.Sprintf("%.1fs / %.1fs (%.2f)", float64(f.WallMS)/1000, float64(f.ScheduledMS)/1000, float64(f.WallMS)/float64(f.ScheduledMS))
		}
		verdict := r.Verdict.Verdict
		if len(r.Verdict.CannotTell) > 0 {
			verdict += "; cannot tell " + strings.Join(r.Verdict.CannotTell, ", ")
		}
		if r.Partial != "" {
			verdict += " (partial)"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %d | %d | %d | %d | %d | %d | %s |\n", r.Label(), r.Expected, verdict,
			yesNo(r.Met), strings.Join(r.Verdict.Violations, ", "), f.Duplicates, f.EventsLostSilent, f.EventsLostSurfaced,
			f.Forks, f.OrphanedResults, f.CallsUnknown, ratio)
	}
	writeJudgements(w, run)
	writeLimits(w, run)
	for _, r := range run.Results {
		if r.Met {
			continue
		}
		fmt.Fprintf(w, "\n## %s: expectation not met\n\n", r.Label())
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

// savedLine says, for a run judged again offline, how many verdicts match
// the saved verdict.json files, or "" when none was compared.
func savedLine(run *Run) string {
	compared, same := 0, 0
	for _, r := range run.Results {
		if r.Saved != "" {
			compared++
		}
		if r.Saved == SavedSame {
			same++
		}
	}
	switch {
	case compared == 0:
		return ""
	case same == compared:
		return fmt.Sprintf("Judged again: every verdict (%d of %d) matches its saved verdict.json.", same, compared)
	}
	return fmt.Sprintf("Judged again: %d of %d verdicts match their saved verdict.json; the others are named below.", same, compared)
}

// runScope says what share of the experiments the run took, how often
// each ran and what it joins, for the summary's first line.
func runScope(run *Run) string {
	var parts []string
	if run.Shard != "" {
		parts = append(parts, "shard "+run.Shard)
	}
	if run.Repeat > 1 {
		parts = append(parts, fmt.Sprintf("each experiment %d times", run.Repeat))
	}
	if len(run.Merged) > 0 {
		parts = append(parts, fmt.Sprintf("merged from %d runs", len(run.Merged)))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", " + strings.Join(parts, ", ")
}

// writeTallies writes how often each experiment met its expectation, the
// distinct outcomes seen and links to the runs of each.
func writeTallies(w io.Writer, run *Run) {
	fmt.Fprintln(w, "| experiment | expected | met | outcomes seen (runs) |")
	fmt.Fprintln(w, "|---|---|---:|---|")
	for _, t := range run.TallyRuns() {
		var outcomes []string
		for _, o := range t.Outcomes {
			links := make([]string, len(o.Runs))
			for i, dir := range o.Runs {
				links[i] = fmt.Sprintf("[%s](%s/)", runLinkText(dir), dir)
			}
			label := fmt.Sprintf("%s ×%d", o.Label(), o.Count)
			if !o.Met {
				label = "**" + label + ", not met**"
			}
			outcomes = append(outcomes, label+" ("+strings.Join(links, " ")+")")
		}
		met := fmt.Sprintf("%d of %d", t.Met, t.Runs)
		if t.Met < t.Runs {
			met = "**" + met + "**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.Name, t.Expected, met, strings.Join(outcomes, "; "))
	}
	fmt.Fprintln(w)
}

// runLinkText is a repetition's folder as a link says it: "r3" of
// "reset-storm.r3", the whole name of a folder without a repetition.
func runLinkText(dir string) string {
	if ext := path.Ext(dir); len(ext) > 1 {
		return ext[1:]
	}
	return path.Base(dir)
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
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Items []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
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
// error is an error. When experiments ran more than once, each has a test
// suite of its own with a case per run, so the suite's tests, failures and
// errors are its counts; its properties name the runs met and the outcomes
// seen.
func WriteJUnit(w io.Writer, run *Run) error {
	class := "chaosrun." + run.Runtime
	var suites []junitSuite
	if !run.Repeated() {
		s := junitSuite{Name: class, Time: secs(run.WallMS)}
		for _, r := range run.Results {
			s.add(junitCaseOf(r, class, r.Name))
		}
		suites = append(suites, s)
	} else {
		for _, t := range run.TallyRuns() {
			s := junitSuite{Name: class + "." + t.Name, Properties: &junitProperties{Items: []junitProperty{
				{Name: "met", Value: fmt.Sprintf("%d of %d", t.Met, t.Runs)}}}}
			for _, o := range t.Outcomes {
				s.Properties.Items = append(s.Properties.Items, junitProperty{Name: "outcome", Value: fmt.Sprintf("%s ×%d", o.Label(), o.Count)})
			}
			var ms int64
			for _, r := range run.Results {
				if r.Name == t.Name {
					c := junitCaseOf(r, class+"."+t.Name, r.Label())
					s.add(c)
					ms += r.Wall.Milliseconds()
				}
			}
			s.Time = secs(ms)
			suites = append(suites, s)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: suites}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// add appends c and counts it.
func (s *junitSuite) add(c junitCase) {
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Error != nil {
		s.Errors++
	}
	s.Cases = append(s.Cases, c)
}

func junitCaseOf(r *ExperimentResult, class, name string) junitCase {
	c := junitCase{Name: name, Classname: class, SystemOut: "results: " + r.Dir, Time: secs(r.Wall.Milliseconds())}
	switch {
	case r.Verdict == nil:
		c.Error = &junitProblem{Message: r.Error, Type: "harness"}
	case !r.Met:
		c.Failure = &junitProblem{Message: strings.Join(r.Reasons, "; "), Type: r.Verdict.Verdict, Text: evidence(r.Verdict)}
	}
	if r.Verdict != nil {
		c.Time = secs(r.Verdict.Figures.WallMS)
		c.SystemOut += "\n" + judgementLines(r.Verdict)
	}
	return c
}

func secs(ms int64) string { return fmt.Sprintf("%.3f", float64(ms)/1000) }

func evidence(v *check.Verdict) string {
	var b strings.Builder
	for _, r := range append(append([]check.Result(nil), v.Assumptions...), v.Invariants...) {
		if r.Held() || r.Status == check.NotJudged || r.Status == check.CannotTell {
			continue
		}
		fmt.Fprintf(&b, "%s: %s\n", r.ID, r.Summary)
		for _, e := range r.Evidence {
			fmt.Fprintf(&b, "  %s\n", e)
		}
	}
	return b.String()
}

// WriteJSON writes a file of a results folder as indented JSON.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

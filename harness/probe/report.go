package probe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
)

// Files of a probe's folder.
const (
	MarkdownFile = "probe.md"
	JSONFile     = "probe.json"
	// ChecksFile is every check in the conformance suite's checks.json
	// shape; ChecksDir holds one checks.json per scenario, as the suite
	// writes them.
	ChecksFile = "checks.json"
	ChecksDir  = "checks"
)

// Save writes probe.json, probe.md, checks.json and checks/<scenario>/.
func (r *Report) Save(dir string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, JSONFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	var md bytes.Buffer
	r.WriteMarkdown(&md)
	if err := os.WriteFile(filepath.Join(dir, MarkdownFile), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return r.saveConformance(dir)
}

// LoadReport reads a saved probe.json.
func LoadReport(dir string) (*Report, error) {
	b, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return nil, fmt.Errorf("probe: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("probe: %s: %w", filepath.Join(dir, JSONFile), err)
	}
	return &r, nil
}

// scenarios lists the report's scenarios in order.
func (r *Report) scenarios() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.Checks {
		if !seen[c.Scenario] {
			seen[c.Scenario] = true
			out = append(out, c.Scenario)
		}
	}
	return out
}

// WriteTable writes the terminal scorecard: per scenario, a line per check
// with its mark, figure and one line of evidence.
func (r *Report) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "chaosrun probe: %s (%d experiments, %s)\n", r.Subject, r.Experiments, (time.Duration(r.WallMS) * time.Millisecond).Round(time.Second))
	for _, n := range r.Notes {
		fmt.Fprintf(w, "  note: %s\n", n)
	}
	for _, sc := range r.scenarios() {
		fmt.Fprintf(w, "\n%s\n", sc)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		for _, c := range r.Checks {
			if c.Scenario != sc {
				continue
			}
			fig := c.Figure
			if fig == "" {
				fig = "-"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", c.Status.Mark(), c.Name, fig, shorten(c.Evidence, 140))
		}
		tw.Flush()
	}
}

// WriteMarkdown writes probe.md: the scorecard with every check's evidence
// and the experiments it rests on.
func (r *Report) WriteMarkdown(w io.Writer) {
	fmt.Fprintf(w, "# chaosrun probe: %s\n\n", r.Subject)
	fmt.Fprintf(w, "%d experiments in %s; revisions %s. Every check links the experiments it rests on; "+
		"`chaosrun report %s` judges them again from their records.\n\n",
		r.Experiments, (time.Duration(r.WallMS) * time.Millisecond).Round(time.Second), strings.Join(r.Protocols, ", "), "experiments")
	for _, n := range r.Notes {
		fmt.Fprintf(w, "- %s\n", n)
	}
	for _, sc := range r.scenarios() {
		fmt.Fprintf(w, "\n## %s\n\n| | check | id | figure | evidence | experiments |\n|---|---|---|---|---|---|\n", sc)
		for _, c := range r.Checks {
			if c.Scenario != sc {
				continue
			}
			var links []string
			for _, e := range c.Experiments {
				links = append(links, fmt.Sprintf("[%s](%s/)", filepath.Base(e), e))
			}
			fmt.Fprintf(w, "| %s | %s | `%s` | %s | %s | %s |\n", c.Status.Mark(), c.Name, c.ID, mdCell(c.Figure),
				mdCell(c.Evidence), strings.Join(links, " "))
		}
	}
}

func mdCell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ") }

package probe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// The MCP conformance suite (modelcontextprotocol/conformance) writes one
// checks.json per scenario: a JSON array of ConformanceCheck objects (its
// src/types.ts). A probe writes its checks in that shape, so a team that
// runs the suite can read them with its own tooling and keep one
// expected-failures file (a baseline) for both.

// Conformance statuses (CheckStatus).
const (
	StatusSuccess = "SUCCESS"
	StatusFailure = "FAILURE"
	StatusWarning = "WARNING"
	StatusSkipped = "SKIPPED"
	StatusInfo    = "INFO"
)

// ConformanceCheck is the suite's check record.
type ConformanceCheck struct {
	ID             string          `json:"id"`
	Name           string          `json:"name"`
	Description    string          `json:"description"`
	Status         string          `json:"status"`
	Timestamp      string          `json:"timestamp"`
	SpecReferences []SpecReference `json:"specReferences,omitempty"`
	Details        map[string]any  `json:"details,omitempty"`
	Metadata       map[string]any  `json:"metadata,omitempty"`
	ErrorMessage   string          `json:"errorMessage,omitempty"`
	Logs           []string        `json:"logs,omitempty"`
}

// SpecReference names the part of the specification a check rests on.
type SpecReference struct {
	ID  string `json:"id"`
	URL string `json:"url,omitempty"`
}

// conformanceStatus maps a probe status: a pass succeeds, a fail fails, a
// measurement is information, and what the records cannot tell is skipped
// (it reports no requirement violated), its reason in details.
func conformanceStatus(s Status) string {
	switch s {
	case Pass:
		return StatusSuccess
	case Fail:
		return StatusFailure
	case Measured:
		return StatusInfo
	}
	return StatusSkipped
}

// Conformance returns the report's checks in the suite's shape.
func (r *Report) Conformance() []ConformanceCheck {
	ts := r.Started.UTC().Format(time.RFC3339Nano)
	out := make([]ConformanceCheck, 0, len(r.Checks))
	for _, c := range r.Checks {
		cc := ConformanceCheck{ID: c.ID, Name: c.Name, Description: c.Evidence, Status: conformanceStatus(c.Status), Timestamp: ts,
			SpecReferences: []SpecReference{{ID: "MCP-Streamable-HTTP-resumability", URL: "https://modelcontextprotocol.io/specification/2025-11-25/basic/transports#resumability-and-redelivery"}},
			Metadata:       map[string]any{"scenario": c.Scenario, "condition": c.Condition, "tool": "chaosrun probe"},
			Details:        map[string]any{"experiments": c.Experiments}}
		if c.Protocol != "" {
			cc.Metadata["protocol"] = c.Protocol
		}
		if c.Figure != "" {
			cc.Details["figure"] = c.Figure
		}
		for k, v := range c.Values {
			cc.Details[k] = v
		}
		switch c.Status {
		case Fail:
			cc.ErrorMessage = c.Evidence
		case CannotTell:
			cc.Details["cannot_tell"] = c.Why
		}
		out = append(out, cc)
	}
	return out
}

func (r *Report) saveConformance(dir string) error {
	all := r.Conformance()
	if err := writeChecks(filepath.Join(dir, ChecksFile), all); err != nil {
		return err
	}
	for _, sc := range r.scenarios() {
		var mine []ConformanceCheck
		for _, c := range all {
			if c.Metadata["scenario"] == sc {
				mine = append(mine, c)
			}
		}
		d := filepath.Join(dir, ChecksDir, sc)
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		if err := writeChecks(filepath.Join(d, ChecksFile), mine); err != nil {
			return err
		}
	}
	return nil
}

func writeChecks(path string, cs []ConformanceCheck) error {
	b, err := json.MarshalIndent(cs, "", "  ")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

// Baseline is an expected-failures file in the conformance suite's format:
//
//	server:
//	  - chaosrun-probe-server-2025-11-25                          # the whole scenario may fail
//	  - chaosrun-probe-server-2025-11-25:cursor-evicted-answer    # only this check may fail
//	client:
//	  - chaosrun-probe-client:blind-retries
type Baseline struct {
	Server []BaselineEntry
	Client []BaselineEntry
}

// BaselineEntry is one line of a baseline: a scenario, and a check of it
// when only that check may fail.
type BaselineEntry struct {
	Scenario, CheckID string
}

func (e BaselineEntry) String() string {
	if e.CheckID == "" {
		return e.Scenario
	}
	return e.Scenario + ":" + e.CheckID
}

// ErrBaseline marks a baseline file that cannot be read.
var ErrBaseline = errors.New("invalid baseline")

// LoadBaseline reads a baseline file; problems name the file, line and
// entry.
func LoadBaseline(path string) (*Baseline, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBaseline, err)
	}
	var doc struct {
		Server []yaml.Node `yaml:"server"`
		Client []yaml.Node `yaml:"client"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: %s: %v (a baseline is a mapping with server: and client: lists)", ErrBaseline, path, err)
	}
	var b Baseline
	for _, sec := range []struct {
		name  string
		nodes []yaml.Node
		out   *[]BaselineEntry
	}{{"server", doc.Server, &b.Server}, {"client", doc.Client, &b.Client}} {
		whole := map[string]bool{}
		for i, n := range sec.nodes {
			e, err := parseEntry(n)
			if err != nil {
				return nil, fmt.Errorf("%w: %s:%d: %s[%d]: %v", ErrBaseline, path, n.Line, sec.name, i, err)
			}
			if e.CheckID == "" {
				whole[e.Scenario] = true
			}
			*sec.out = append(*sec.out, e)
		}
		for i, e := range *sec.out {
			if e.CheckID != "" && whole[e.Scenario] {
				return nil, fmt.Errorf("%w: %s:%d: %s[%d]: %q expects the whole scenario to fail, so %q is redundant: remove one or the other",
					ErrBaseline, path, sec.nodes[i].Line, sec.name, i, e.Scenario, e.String())
			}
		}
	}
	return &b, nil
}

func parseEntry(n yaml.Node) (BaselineEntry, error) {
	if n.Kind == yaml.MappingNode && len(n.Content) == 2 {
		return BaselineEntry{}, fmt.Errorf("did you write '- %s: %s'? Remove the space after the colon: '- %s:%s'",
			n.Content[0].Value, n.Content[1].Value, n.Content[0].Value, n.Content[1].Value)
	}
	if n.Kind != yaml.ScalarNode || n.Value == "" {
		return BaselineEntry{}, errors.New("an entry is '<scenario>' or '<scenario>:<check-id>'")
	}
	scenario, check, found := strings.Cut(n.Value, ":")
	if found && (scenario == "" || check == "") {
		return BaselineEntry{}, fmt.Errorf("%q: both sides of the colon are required", n.Value)
	}
	return BaselineEntry{Scenario: scenario, CheckID: check}, nil
}

// BaselineResult is a report held against a baseline, as the suite's
// evaluateBaseline holds its results: a failure not in the baseline is
// unexpected; an entry whose checks now pass is stale; both fail the run.
type BaselineResult struct {
	Unexpected []string `json:"unexpected_failures"`
	Stale      []string `json:"stale_entries"`
	Expected   []string `json:"expected_failures"`
}

// OK reports whether every failure was expected and no entry is stale.
func (b BaselineResult) OK() bool { return len(b.Unexpected) == 0 && len(b.Stale) == 0 }

func failed(status string) bool { return status == StatusFailure || status == StatusWarning }

// Evaluate holds the report's checks against the baseline's section for
// the report's kind.
func (r *Report) Evaluate(b *Baseline) BaselineResult {
	entries := b.Server
	if r.Kind == "client" {
		entries = b.Client
	}
	whole := map[string]bool{}
	byScenario := map[string][]string{}
	for _, e := range entries {
		if e.CheckID == "" {
			whole[e.Scenario] = true
		} else {
			byScenario[e.Scenario] = append(byScenario[e.Scenario], e.CheckID)
		}
	}
	res := BaselineResult{Unexpected: []string{}, Stale: []string{}, Expected: []string{}}
	all := r.Conformance()
	for _, sc := range r.scenarios() {
		var cs []ConformanceCheck
		for _, c := range all {
			if c.Metadata["scenario"] == sc {
				cs = append(cs, c)
			}
		}
		anyFailed := slices.ContainsFunc(cs, func(c ConformanceCheck) bool { return failed(c.Status) })
		if whole[sc] {
			if anyFailed {
				res.Expected = append(res.Expected, sc)
			} else {
				res.Stale = append(res.Stale, sc)
			}
			continue
		}
		expected := byScenario[sc]
		for _, c := range cs {
			if !failed(c.Status) {
				continue
			}
			entry := BaselineEntry{Scenario: sc, CheckID: c.ID}.String()
			if slices.Contains(expected, c.ID) {
				res.Expected = append(res.Expected, entry)
			} else {
				res.Unexpected = append(res.Unexpected, entry)
			}
		}
		for _, id := range expected {
			for _, c := range cs {
				if c.ID == id && c.Status == StatusSuccess {
					res.Stale = append(res.Stale, BaselineEntry{Scenario: sc, CheckID: id}.String())
					break
				}
			}
		}
	}
	return res
}

// Failures lists the failed checks as baseline entries.
func (r *Report) Failures() []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == Fail {
			out = append(out, BaselineEntry{Scenario: c.Scenario, CheckID: c.ID}.String())
		}
	}
	return out
}

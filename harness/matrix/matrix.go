// Package matrix runs one set of fault scenarios across every pair of a
// list of clients and a list of servers (the reference implementations and
// the real SDKs), and tabulates which invariants each pair holds under
// each scenario.
//
// A matrix file composes experiments: every cell (scenario × client ×
// server) becomes an ordinary experiment, validated like an experiment
// file (problems point at the matrix file's lines), run by the harness
// with its own results folder, and judged from its own ledger and
// histories. Each cell carries an expectation recording what the pair
// does today, so a change in an SDK's behaviour shows up as an unmet
// expectation. Nothing in a table is typed in: every cell is a verdict
// from a run that `chaosrun report` can judge again.
//
// A matrix file may list protocols (client.protocol values): every cell is
// then one client, one server and one protocol, named client@server@protocol
// in expect:, and a file without them names its cells client@server at the
// experiment's default protocol. A pair that cannot speak a protocol
// (spec.Unspoken), and a scenario that needs what a protocol lacks (its
// needs:, see [Needs]), are not run: the table says why in their place.
package matrix

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"gopkg.in/yaml.v3"
)

// File is a matrix file. The client, server, workload and fault parts use
// the experiment file's schema.
type File struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Seed        yaml.Node   `yaml:"seed"`
	TimeScale   yaml.Node   `yaml:"time_scale"`
	Clients     []yaml.Node `yaml:"clients"`  // client mappings, each with its target
	Servers     []yaml.Node `yaml:"servers"`  // server mappings, each with its target
	Workload    yaml.Node   `yaml:"workload"` // the default workload of every scenario
	// Protocols lists the client.protocol of every cell, one table per
	// protocol; absent, every cell runs at the experiment default.
	Protocols yaml.Node  `yaml:"protocols"`
	Scenarios []Scenario `yaml:"scenarios"`
	// Expect maps a scenario name, then the cell's key (see [Key]), to that
	// cell's expect: block.
	Expect map[string]map[string]yaml.Node `yaml:"expect"`
}

// Scenario is one set of faults (a column group of the table), with the
// server, client and workload settings it needs on top of the defaults.
type Scenario struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Server      yaml.Node `yaml:"server"`
	Client      yaml.Node `yaml:"client"`
	Workload    yaml.Node `yaml:"workload"`
	Faults      yaml.Node `yaml:"faults"`
	// Needs lists what the scenario needs of a protocol (see [Needs]); at
	// a protocol lacking one it is not run.
	Needs yaml.Node `yaml:"needs"`
}

// What a scenario can need of a protocol revision (Scenario.Needs).
const (
	// NeedSessions: a session the server can expire (2025-03-26 to
	// 2025-11-25).
	NeedSessions = "sessions"
	// NeedResumption: a stream resumed with Last-Event-ID (2025-03-26 to
	// 2025-11-25).
	NeedResumption = "resumption"
	// NeedStreamCancellation: a closed response stream cancels its request
	// (2026-07-28).
	NeedStreamCancellation = "stream_cancellation"
)

// Needs lists the values of a scenario's needs:.
var Needs = []string{NeedSessions, NeedResumption, NeedStreamCancellation}

// lacks says why protocol cannot run a scenario that needs need, or "".
func lacks(need, protocol string) string {
	modern := mcp.ModernVersion(protocol)
	switch {
	case need == NeedSessions && modern:
		return "needs sessions, and " + protocol + " has none"
	case need == NeedResumption && modern:
		return "needs Last-Event-ID resumption, and " + protocol + " has none"
	case need == NeedStreamCancellation && !modern:
		return "needs a closed response stream to cancel its call, which " + cmp.Or(protocol, mcp.LatestVersion) + " does not do"
	}
	return ""
}

// Matrix is a loaded matrix: its cells, each an experiment.
type Matrix struct {
	Name        string
	Description string
	Path        string
	Clients     []string // client targets, in table order
	Servers     []string // server targets, in table order
	Protocols   []string // the protocols listed, in table order; none: the default
	Scenarios   []Scenario
	Cells       []Cell
	// NotRun are the cells the matrix does not run, and why.
	NotRun []NotRun
	// Share is the share of the cells the matrix holds ("2/4"; see
	// Matrix.Shard), empty for all of them.
	Share string
}

// Cell is one experiment of the matrix. Protocol is "" when the matrix
// lists no protocols.
type Cell struct {
	Scenario, Client, Server, Protocol string
	Experiment                         *spec.Experiment
}

// NotRun is a cell the matrix does not run, or (Client and Server empty)
// a whole scenario at one protocol, with why.
type NotRun struct {
	Scenario string `json:"scenario"`
	Client   string `json:"client,omitempty"`
	Server   string `json:"server,omitempty"`
	Protocol string `json:"protocol"`
	Why      string `json:"why"`
}

// Key is how expect: names a cell within its scenario: client@server, and
// client@server@protocol when the matrix lists protocols.
func Key(client, server, protocol string) string {
	if protocol == "" {
		return client + "@" + server
	}
	return client + "@" + server + "@" + protocol
}

var (
	nameRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): `)
)

// decodeProblems turns a decoding error of the matrix file into problems,
// one per message, each at its line.
func decodeProblems(path string, err error) []spec.Problem {
	if errors.Is(err, io.EOF) {
		return []spec.Problem{{File: path, Msg: "the file is empty: a matrix is a YAML mapping"}}
	}
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var out []spec.Problem
	for _, msg := range msgs {
		p := spec.Problem{File: path, Msg: strings.TrimPrefix(msg, "yaml: ")}
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Msg = msg[len(m[0]):]
		}
		out = append(out, p)
	}
	return out
}

// Load reads and validates a matrix file and every cell it composes. All
// problems are reported together, each once, as a *spec.Error.
func Load(path string) (*Matrix, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", spec.ErrInvalid, path, err)
	}
	var f File
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		return nil, &spec.Error{Problems: decodeProblems(path, err)}
	}
	c := &composer{file: &f, path: path, seen: map[string]bool{}}
	m := &Matrix{Name: f.Name, Description: f.Description, Path: path, Scenarios: f.Scenarios}
	c.check(m)
	if len(c.problems) == 0 {
		m.Cells = c.cells(m)
	}
	if len(c.problems) > 0 {
		return nil, &spec.Error{Problems: c.problems}
	}
	return m, nil
}

// composer builds cells and collects problems, each once.
type composer struct {
	file     *File
	path     string
	problems []spec.Problem
	seen     map[string]bool
}

func (c *composer) add(n *yaml.Node, field, format string, args ...any) {
	p := spec.Problem{File: c.path, Field: field, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Col = n.Line, n.Column
	}
	c.addProblem(p)
}

func (c *composer) addProblem(p spec.Problem) {
	if key := p.String(); !c.seen[key] {
		c.seen[key] = true
		c.problems = append(c.problems, p)
	}
}

// check validates what the cells cannot: names, targets, protocols and
// needs, and that every cell run has an expectation and every expectation
// a cell that runs.
func (c *composer) check(m *Matrix) {
	f := c.file
	if !nameRE.MatchString(f.Name) {
		c.add(nil, "name", "must be lower-case letters, digits and single dashes, got %q", f.Name)
	}
	m.Clients = c.targets(f.Clients, "clients")
	m.Servers = c.targets(f.Servers, "servers")
	m.Protocols = c.protocols(&f.Protocols)
	scenarios := map[string]bool{}
	runs, notRun := map[string]map[string]bool{}, map[string]map[string]string{}
	for i, s := range f.Scenarios {
		field := fmt.Sprintf("scenarios[%d].name", i)
		switch {
		case !nameRE.MatchString(s.Name):
			c.add(nil, field, "must be lower-case letters, digits and single dashes, got %q", s.Name)
		case scenarios[s.Name]:
			c.add(nil, field, "%q names two scenarios", s.Name)
		}
		scenarios[s.Name] = true
		runs[s.Name], notRun[s.Name] = map[string]bool{}, map[string]string{}
		needs := c.needs(&f.Scenarios[i].Needs, i)
		for _, p := range m.tableProtocols() {
			if why := scenarioLacks(needs, p); why != "" {
				m.NotRun = append(m.NotRun, NotRun{Scenario: s.Name, Protocol: p, Why: why})
				for _, cl := range m.Clients {
					for _, sv := range m.Servers {
						notRun[s.Name][Key(cl, sv, p)] = why
					}
				}
				continue
			}
			for _, cl := range m.Clients {
				for _, sv := range m.Servers {
					key := Key(cl, sv, p)
					if why := cmp.Or(spec.Unspoken(true, cl, p), spec.Unspoken(false, sv, p)); why != "" {
						m.NotRun = append(m.NotRun, NotRun{Scenario: s.Name, Client: cl, Server: sv, Protocol: p, Why: why})
						notRun[s.Name][key] = why
						continue
					}
					runs[s.Name][key] = true
					if _, ok := f.Expect[s.Name][key]; !ok {
						c.add(nil, "expect."+s.Name+"."+key, "missing: every cell states what it should conclude")
					}
				}
			}
		}
	}
	if len(f.Scenarios) == 0 {
		c.add(nil, "scenarios", "is required: at least one scenario")
	}
	keys := "client@server of the listed targets"
	if len(m.Protocols) > 0 {
		keys = "client@server@protocol of the listed targets and protocols"
	}
	for name, cells := range f.Expect {
		if !scenarios[name] {
			c.add(nil, "expect."+name, "no scenario has this name")
			continue
		}
		for key, n := range cells {
			switch why, skipped := notRun[name][key]; {
			case skipped:
				c.add(&n, "expect."+name+"."+key, "this cell is not run (%s): it has nothing to expect", why)
			case !runs[name][key]:
				c.add(&n, "expect."+name+"."+key, "no such cell: keys are %s", keys)
			}
		}
	}
}

// tableProtocols are the protocols of the tables: those listed, else one
// table at the default ("").
func (m *Matrix) tableProtocols() []string {
	if len(m.Protocols) == 0 {
		return []string{""}
	}
	return m.Protocols
}

// scenarioLacks says why a scenario with needs is not run at protocol, or "".
func scenarioLacks(needs []string, protocol string) string {
	for _, n := range needs {
		if why := lacks(n, protocol); why != "" {
			return why
		}
	}
	return ""
}

// protocols reads the protocols: list.
func (c *composer) protocols(n *yaml.Node) []string {
	return c.list(n, "protocols", spec.Protocols(), "a protocol")
}

// needs reads scenario i's needs: list.
func (c *composer) needs(n *yaml.Node, i int) []string {
	return c.list(n, fmt.Sprintf("scenarios[%d].needs", i), Needs, "a need")
}

// list reads a list of distinct values from allowed; absent is empty.
func (c *composer) list(n *yaml.Node, field string, allowed []string, what string) []string {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		c.add(n, field, "must be a list of %s (%s)", strings.TrimPrefix(what, "a ")+"s", strings.Join(allowed, ", "))
		return nil
	}
	var out []string
	for i, v := range n.Content {
		f := fmt.Sprintf("%s[%d]", field, i)
		switch {
		case v.Kind != yaml.ScalarNode || !slices.Contains(allowed, v.Value):
			c.add(v, f, "must be one of %s, got %q", strings.Join(allowed, ", "), v.Value)
		case slices.Contains(out, v.Value):
			c.add(v, f, "%q is listed twice", v.Value)
		default:
			out = append(out, v.Value)
		}
	}
	if len(n.Content) == 0 {
		c.add(n, field, "is empty: list %s, or leave it out", what)
	}
	return out
}

// targets reads the target of every client or server entry.
func (c *composer) targets(entries []yaml.Node, field string) []string {
	var out []string
	for i := range entries {
		n := &entries[i]
		t := mappingValue(n, "target")
		switch {
		case t == nil:
			c.add(n, fmt.Sprintf("%s[%d].target", field, i), "is required")
		case contains(out, t.Value):
			c.add(t, fmt.Sprintf("%s[%d].target", field, i), "%q is listed twice", t.Value)
		default:
			out = append(out, t.Value)
		}
	}
	if len(entries) == 0 {
		c.add(nil, field, "is required: at least one")
	}
	return out
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// Shard returns the matrix with only the cells of shard s, chosen by their
// experiments' names as s.Select chooses plans: the cells of m.Shard(s)
// are those whose plans s.Select(m.Plans(o)) keeps, in the same order.
func (m *Matrix) Shard(s results.Shard) *Matrix {
	names := make([]string, len(m.Cells))
	for i, c := range m.Cells {
		names[i] = c.Experiment.Name
	}
	out := *m
	out.Cells = nil
	for _, i := range s.Pick(names) {
		out.Cells = append(out.Cells, m.Cells[i])
	}
	out.Share = s.String()
	return &out
}

// Plans scales every cell's experiment, in cell order.
func (m *Matrix) Plans(o spec.Overrides) []*spec.Plan {
	plans := make([]*spec.Plan, len(m.Cells))
	for i, c := range m.Cells {
		plans[i] = c.Experiment.Plan(o)
	}
	return plans
}

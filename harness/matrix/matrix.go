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
package matrix

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/spec"
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
	Scenarios   []Scenario  `yaml:"scenarios"`
	// Expect maps a scenario name, then "client@server", to that cell's
	// expect: block.
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
}

// Matrix is a loaded matrix: its cells, each an experiment.
type Matrix struct {
	Name        string
	Description string
	Path        string
	Clients     []string // client targets, in table order
	Servers     []string // server targets, in table order
	Scenarios   []Scenario
	Cells       []Cell
	// Share is the share of the cells the matrix holds ("2/4"; see
	// Matrix.Shard), empty for all of them.
	Share string
}

// Cell is one experiment of the matrix.
type Cell struct {
	Scenario, Client, Server string
	Experiment               *spec.Experiment
}

// Key is how expect: names a cell within its scenario.
func Key(client, server string) string { return client + "@" + server }

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

// check validates what the cells cannot: names, targets, and that every
// cell has an expectation and every expectation a cell.
func (c *composer) check(m *Matrix) {
	f := c.file
	if !nameRE.MatchString(f.Name) {
		c.add(nil, "name", "must be lower-case letters, digits and single dashes, got %q", f.Name)
	}
	m.Clients = c.targets(f.Clients, "clients")
	m.Servers = c.targets(f.Servers, "servers")
	scenarios := map[string]bool{}
	for i, s := range f.Scenarios {
		field := fmt.Sprintf("scenarios[%d].name", i)
		switch {
		case !nameRE.MatchString(s.Name):
			c.add(nil, field, "must be lower-case letters, digits and single dashes, got %q", s.Name)
		case scenarios[s.Name]:
			c.add(nil, field, "%q names two scenarios", s.Name)
		}
		scenarios[s.Name] = true
		cells := f.Expect[s.Name]
		for _, cl := range m.Clients {
			for _, sv := range m.Servers {
				if _, ok := cells[Key(cl, sv)]; !ok {
					c.add(nil, "expect."+s.Name+"."+Key(cl, sv), "missing: every cell states what it should conclude")
				}
			}
		}
	}
	if len(f.Scenarios) == 0 {
		c.add(nil, "scenarios", "is required: at least one scenario")
	}
	for name, cells := range f.Expect {
		if !scenarios[name] {
			c.add(nil, "expect."+name, "no scenario has this name")
			continue
		}
		for key, n := range cells {
			cl, sv, _ := strings.Cut(key, "@")
			if !contains(m.Clients, cl) || !contains(m.Servers, sv) {
				c.add(&n, "expect."+name+"."+key, "no such cell: keys are client@server of the listed targets")
			}
		}
	}
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
func (m *Matrix) Shard(s harness.Shard) *Matrix {
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

package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads, decodes, defaults and validates one experiment file.
func Load(path string) (*Experiment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path, err)
	}
	return Parse(path, b)
}

// Parse decodes, defaults and validates an experiment from its bytes; path
// names it in errors.
func Parse(path string, src []byte) (*Experiment, error) {
	ps := &problems{file: path}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(src))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.add(0, 0, "", "the file is empty: an experiment is a YAML mapping")
			return nil, ps.err()
		}
		line, msg := syntaxProblem(err.Error())
		ps.add(line, 0, "", "%s", msg)
		return nil, ps.err()
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		ps.add(extra.Line, extra.Column, "", "one experiment per file: found a second YAML document")
		return nil, ps.err()
	}
	return ParseNode(path, &doc, src)
}

// ParseNode decodes, defaults and validates an experiment from a YAML node
// tree, for experiments composed from parts of another file (a matrix):
// problems are located by the nodes' own lines and columns, in path. src
// is kept as the experiment's Source.
func ParseNode(path string, root *yaml.Node, src []byte) (*Experiment, error) {
	ps := &problems{file: path}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if root.Kind != yaml.MappingNode {
		ps.add(root.Line, root.Column, "", "an experiment is a YAML mapping")
		return nil, ps.err()
	}
	x := &Experiment{Path: path, Source: src, nodes: map[string]*yaml.Node{}}
	checkKeys(root, reflect.TypeOf(*x), "", x.nodes, ps)
	if err := root.Decode(x); err != nil {
		x.typeProblems(err, ps)
	}
	if len(ps.list) > 0 {
		return nil, ps.err()
	}
	x.decodeTargets(ps)
	if len(ps.list) > 0 {
		return nil, ps.err()
	}
	x.applyDefaults()
	x.validate(ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return x, nil
}

var lineRE = regexp.MustCompile(`line (\d+)(?: column (\d+))?:?`)

// position reads "line N" and an optional "column C" from a decode error.
func position(msg string) (line, col int) {
	m := lineRE.FindStringSubmatch(msg)
	if m == nil {
		return 0, 0
	}
	line, _ = strconv.Atoi(m[1])
	col, _ = strconv.Atoi(m[2])
	return line, col
}

// typeProblems turns decode errors ("line 7: cannot unmarshal !!str `x`
// into int", or a custom decoder's "line 7 column 3: ...") into problems
// located at the field they concern.
func (x *Experiment) typeProblems(err error, ps *problems) {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	for _, msg := range msgs {
		line, col := position(msg)
		field := x.fieldAt(line, col, msg)
		if n := x.nodes[field]; n != nil && col == 0 {
			col = n.Column
		}
		ps.add(line, col, field, "%s", plainTypeError(line, stripPosition(msg)))
	}
}

// fieldAt finds the field whose value starts at line and col. Without a
// column (yaml.v3's type errors give none) it takes, of the fields on
// line, the one whose value msg quotes ("cannot unmarshal !!str `x`", a
// long value shortened), then the deepest, then the leftmost: two values on one line of a flow
// mapping never leave the choice to map order.
func (x *Experiment) fieldAt(line, col int, msg string) string {
	quoted := ""
	if m := quotedRE.FindStringSubmatch(msg); m != nil {
		quoted = m[1]
	}
	isQuoted := func(n *yaml.Node) bool {
		return n.Kind == yaml.ScalarNode && quoted != "" && (n.Value == quoted || shortened(n.Value, quoted))
	}
	best := ""
	better := func(path string, n *yaml.Node) bool {
		b := x.nodes[best]
		switch {
		case best == "":
			return true
		case isQuoted(n) != isQuoted(b):
			return isQuoted(n)
		case len(path) != len(best):
			return len(path) > len(best)
		case n.Column != b.Column:
			return n.Column < b.Column
		}
		return path < best
	}
	for path, n := range x.nodes {
		if n.Line != line {
			continue
		}
		if col > 0 && n.Column == col {
			return path
		}
		if col == 0 && better(path, n) {
			best = path
		}
	}
	return best
}

var quotedRE = regexp.MustCompile("`([^`]*)`")

// shortened says whether q is yaml.v3's quote of the long value v in a type
// error: its first seven bytes and "..." (yaml.v3 shortens a value of
// more than ten bytes so).
func shortened(v, q string) bool {
	return len(v) > 10 && q == v[:7]+"..."
}

// at returns the position of a field path, or of its nearest parent that
// appears in the file (a defaulted field has no node of its own).
func (x *Experiment) at(path string) (line, col int) {
	for p := path; ; {
		if n := x.nodes[p]; n != nil {
			return n.Line, n.Column
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			if n := x.nodes[""]; n != nil {
				return n.Line, n.Column
			}
			return 0, 0
		}
		p = p[:i]
	}
}

// LoadPaths loads every experiment named by paths: files, or folders whose
// *.yaml and *.yml files are read (not recursively). Every file is
// validated before anything is returned, and names must be unique; all
// problems of all files are reported together.
func LoadPaths(paths []string) ([]*Experiment, error) {
	files, err := expand(paths)
	if err != nil {
		return nil, err
	}
	var all []Problem
	var out []*Experiment
	seen := map[string]string{}
	for _, f := range files {
		x, err := Load(f)
		var se *Error
		switch {
		case errors.As(err, &se):
			all = append(all, se.Problems...)
			continue
		case err != nil:
			return nil, err
		}
		if prev, dup := seen[x.Name]; dup {
			line, col := x.at("name")
			all = append(all, Problem{File: f, Line: line, Col: col, Field: "name",
				Msg: fmt.Sprintf("%q is also the name of %s", x.Name, prev)})
			continue
		}
		seen[x.Name] = f
		out = append(out, x)
	}
	if len(all) > 0 {
		return nil, &Error{Problems: all}
	}
	return out, nil
}

func expand(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		var found []string
		for _, e := range entries {
			if isYAML(e) {
				found = append(found, filepath.Join(p, e.Name()))
			}
		}
		if len(found) == 0 {
			return nil, fmt.Errorf("%w: %s holds no .yaml experiment files", ErrInvalid, p)
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

func isYAML(e fs.DirEntry) bool {
	ext := filepath.Ext(e.Name())
	return !e.IsDir() && (ext == ".yaml" || ext == ".yml")
}

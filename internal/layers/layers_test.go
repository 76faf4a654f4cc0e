package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rule says which other top-level folders (or, written with a slash, which
// packages and their subpackages) the packages of one folder may depend on,
// directly or through others. A row for a package (written with a slash)
// refines its folder's row for it and its subpackages: the most specific
// row applies.
type rule struct {
	layer string // a top-level folder of the module, or a package in it
	uses  []string
	why   string // shown when the rule is broken
}

// mayUse is the layering, one row for each top-level folder of the module.
var mayUse = []rule{
	{"cmd", []string{"harness", "faults", "sideeffects", "targets", "wire", "internal"}, "the CLI is on top"},
	{"harness", []string{"faults", "sideeffects", "targets", "wire", "internal"}, "the harness is a library: the CLI sits on it, not under it"},
	{"faults", []string{"sideeffects", "targets", "wire", "internal"}, "a leaf imports no harness or cmd code"},
	{"targets", []string{"faults", "sideeffects", "wire", "internal"}, "a leaf imports no harness or cmd code"},
	{"sideeffects", []string{"wire", "internal"}, "the ledger is a witness below the faults and the targets: joining it with client histories is the checker's job"},
	{"wire", []string{"internal"}, "what crosses the wire (the record format, the tap, MCP's vocabulary) sits below the faults and the targets that put it there"},
	{"wire/mcp", nil, "MCP's vocabulary is a leaf that every part speaks: it imports nothing of the module"},
	{"internal", nil, "internal is below all"},
	{"examples", []string{"targets/byo", "internal"}, "an example target knows chaosrun's contract (targets/byo), not its code"},
	{"scripts", nil, "the scripts' tests run them as a user does, importing no code of the module"},
	// A runtime starts agents and says what it can run (agent.Capabilities);
	// it knows no experiment, target or fault: what an agent is to do
	// reaches it as bytes (agent.Spec.Config), and the bring-your-own
	// contract (targets/byo) only as an image's environment.
	{"harness/agent", []string{"internal"}, "the runtime contract knows agents, not experiments"},
	{"harness/local", []string{"harness/agent", "internal"}, "a runtime knows agents, not experiments, targets or faults"},
	{"harness/docker", []string{"harness/agent", "targets/byo", "internal"}, "a runtime knows agents, not experiments, targets or faults"},
	{"harness/kube", []string{"harness/agent", "harness/kube", "internal"}, "a runtime knows agents, not experiments, targets or faults (agentside is its half inside the pods)"},
}

// entry names packages and the only packages that may import them
// directly, besides packages of their own folder: the narrow ways in.
// Tests may import them to look inside.
type entry struct {
	pkgs []string // packages, with their subpackages
	by   []string // folders or packages that may import them
	why  string
}

// entries are the narrow ways in.
var entries = []entry{
	{[]string{"targets/server", "targets/client", "targets/gosdk", "targets/mcpgo"}, []string{"harness/roles", "cmd"},
		"the loader and the runner know a target by its description (targets/catalog); only the agent (harness/roles) runs it"},
}

// pkg is one package of the module; paths are relative to the module.
type pkg struct {
	imports []string // what the package imports
	tests   []string // what its tests import besides
}

// violation is a dependency the layering forbids, with the shortest import
// chain that makes it.
type violation struct {
	from, to string
	chain    []string
	why      string
}

func (v violation) String() string {
	if v.to == "" {
		return v.from + ": " + v.why
	}
	return v.from + " depends on " + v.to + " (" + strings.Join(v.chain, " → ") + "): " + v.why
}

// TestImportsRunOneWay reads the module's import graph with go list and
// fails on every dependency mayUse does not allow.
func TestImportsRunOneWay(t *testing.T) {
	graph := loadModule(t)
	require.Contains(t, graph, "sideeffects", "go list found the module's packages")
	require.Contains(t, graph, "harness/check", "go list found the module's packages")
	for _, v := range violations(graph) {
		t.Error(v)
	}
}

// TestViolations shows that the check catches a forbidden dependency however
// it arises, and only those.
func TestViolations(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string]pkg
		want  [][]string // the chain of each violation
	}{
		{"the layering as it stands", map[string]pkg{
			"cmd/chaosrun":   {imports: []string{"harness"}},
			"harness":        {imports: []string{"harness/check", "faults"}},
			"harness/check":  {imports: []string{"sideeffects", "targets/history", "wire"}},
			"sideeffects":    {imports: []string{"internal/appendlog"}},
			"targets/e2e":    {tests: []string{"sideeffects", "targets/server"}},
			"targets/server": {imports: []string{"wire/mcp"}},
			"faults/proxy":   {imports: []string{"wire/observer"}},
			"wire/observer":  {imports: []string{"wire", "wire/mcp", "internal/runclock"}},
		}, nil},
		{"a leaf importing the harness", map[string]pkg{
			"targets/server": {imports: []string{"harness/check"}},
		}, [][]string{{"targets/server", "harness/check"}}},
		{"the ledger importing a target", map[string]pkg{
			"sideeffects": {imports: []string{"targets/history"}},
		}, [][]string{{"sideeffects", "targets/history"}}},
		{"through packages each allowed on its own", map[string]pkg{
			"examples/byo-client": {imports: []string{"targets/byo"}},
			"targets/byo":         {imports: []string{"wire/mcp"}},
		}, [][]string{{"examples/byo-client", "targets/byo", "wire/mcp"}}},
		{"the ledger importing a fault", map[string]pkg{
			"sideeffects": {imports: []string{"faults"}},
		}, [][]string{{"sideeffects", "faults"}}},
		{"the wire importing what sits on it", map[string]pkg{
			"wire/observer": {imports: []string{"wire"}, tests: []string{"faults/proxy"}},
			"wire":          {imports: []string{"wire/mcp", "sideeffects"}},
		}, [][]string{{"wire", "sideeffects"}, {"wire/observer", "faults/proxy"}, {"wire/observer", "wire", "sideeffects"}}},
		{"MCP's vocabulary importing the record format", map[string]pkg{
			"wire/mcp": {imports: []string{"wire"}},
		}, [][]string{{"wire/mcp", "wire"}}},
		{"a test's import counts", map[string]pkg{
			"faults": {tests: []string{"harness"}},
		}, [][]string{{"faults", "harness"}}},
		{"the tests of an import do not", map[string]pkg{
			"targets/client":  {tests: []string{"targets/history"}},
			"targets/history": {tests: []string{"harness/check"}},
		}, [][]string{{"targets/history", "harness/check"}}},
		{"internal above something", map[string]pkg{
			"internal/runclock": {imports: []string{"wire/mcp"}},
		}, [][]string{{"internal/runclock", "wire/mcp"}}},
		{"an example knows the contract, not the targets", map[string]pkg{
			"examples/byo-server": {imports: []string{"targets/byo", "targets/server"}},
			"targets/byo":         {imports: []string{"internal/runclock"}},
		}, [][]string{{"examples/byo-server", "targets/server"}}},
		{"a folder with no row", map[string]pkg{
			"tools/gen": {imports: []string{"internal/runclock"}},
		}, [][]string{{"tools/gen"}}},
		{"a runtime that knows experiments", map[string]pkg{
			"harness/docker": {imports: []string{"harness/agent", "harness/spec"}},
			"harness/spec":   {imports: []string{"targets/catalog"}},
			"harness/local":  {imports: []string{"harness/agent"}},
		}, [][]string{{"harness/docker", "harness/spec"}, {"harness/docker", "harness/spec", "targets/catalog"}}},
		{"the loader reaching past the catalogue", map[string]pkg{
			"harness/spec":    {imports: []string{"targets/catalog", "targets/server"}, tests: []string{"targets/client"}},
			"targets/catalog": {imports: []string{"targets/server", "targets/client"}},
			"harness/roles":   {imports: []string{"targets/server"}},
		}, [][]string{{"harness/spec", "targets/server"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got [][]string
			for _, v := range violations(tc.graph) {
				got = append(got, v.chain)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// violations checks every package of graph against mayUse and entries, in
// path order.
func violations(graph map[string]pkg) []violation {
	var out []violation
	for _, from := range slices.Sorted(maps.Keys(graph)) {
		r, ok := ruleOf(from)
		if !ok {
			out = append(out, violation{from: from, chain: []string{from}, why: "folder " + layer(from) + " has no row in mayUse"})
			continue
		}
		for _, chain := range reach(graph, from) {
			to := chain[len(chain)-1]
			if !r.allows(to) {
				out = append(out, violation{from: from, to: to, chain: chain, why: r.why})
			}
		}
		for _, to := range graph[from].imports {
			if !r.allows(to) {
				continue // reported above
			}
			if e, ok := entryOf(to); ok && !within(from, layer(to)) && !slices.ContainsFunc(e.by, func(b string) bool { return within(from, b) }) {
				out = append(out, violation{from: from, to: to, chain: []string{from, to}, why: e.why})
			}
		}
	}
	return out
}

// ruleOf is the most specific row of mayUse for package p.
func ruleOf(p string) (rule, bool) {
	best, found := rule{}, false
	for _, r := range mayUse {
		if within(p, r.layer) && (!found || len(r.layer) > len(best.layer)) {
			best, found = r, true
		}
	}
	return best, found
}

// entryOf is the entry that names package p, if one does.
func entryOf(p string) (entry, bool) {
	for _, e := range entries {
		if slices.ContainsFunc(e.pkgs, func(q string) bool { return within(p, q) }) {
			return e, true
		}
	}
	return entry{}, false
}

// within says whether package p is the folder or package q or below it.
func within(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }

// allows reports whether the rule's folder may depend on package to.
func (r rule) allows(to string) bool {
	l := layer(to)
	return l == r.layer || slices.ContainsFunc(r.uses, func(u string) bool {
		return u == l || to == u || strings.HasPrefix(to, u+"/")
	})
}

// reach returns, for every package from depends on, the shortest import
// chain from from to it, in the order of the packages' paths. The tests of
// from count as part of it; the tests of what it imports do not.
func reach(graph map[string]pkg, from string) [][]string {
	parent := map[string]string{from: ""}
	queue := []string{}
	visit := func(p string, imports []string) {
		for _, q := range imports {
			if _, seen := parent[q]; !seen {
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	visit(from, graph[from].imports)
	visit(from, graph[from].tests)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		visit(p, graph[p].imports)
	}
	delete(parent, from)
	var out [][]string
	for _, to := range slices.Sorted(maps.Keys(parent)) {
		chain := []string{to}
		for p := parent[to]; p != ""; p = parent[p] {
			chain = append(chain, p)
		}
		slices.Reverse(chain)
		out = append(out, chain)
	}
	return out
}

// layer is the top-level folder of a package path.
func layer(path string) string {
	top, _, _ := strings.Cut(path, "/")
	return top
}

// loadModule lists the packages of the module that holds this test, with
// their imports of each other.
func loadModule(t *testing.T) map[string]pkg {
	t.Helper()
	gomod, err := exec.Command("go", "env", "GOMOD").Output()
	require.NoError(t, err, "go env GOMOD")
	cmd := exec.Command("go", "list", "-json=ImportPath,Module,Imports,TestImports,XTestImports", "./...")
	cmd.Dir = filepath.Dir(strings.TrimSpace(string(gomod)))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())

	type listed struct {
		ImportPath                         string
		Module                             struct{ Path string }
		Imports, TestImports, XTestImports []string
	}
	var all []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var l listed
		err := dec.Decode(&l)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "decode go list output")
		all = append(all, l)
	}
	require.NotEmpty(t, all, "go list found no package")
	module := all[0].Module.Path + "/"
	// inModule keeps the paths inside the module, relative to it, and drops
	// a package's own path (its external tests import it).
	inModule := func(self string, paths []string) []string {
		var rel []string
		for _, p := range paths {
			if r, ok := strings.CutPrefix(p, module); ok && r != self {
				rel = append(rel, r)
			}
		}
		return rel
	}
	graph := map[string]pkg{}
	for _, l := range all {
		self := strings.TrimPrefix(l.ImportPath, module)
		graph[self] = pkg{
			imports: inModule(self, l.Imports),
			tests:   inModule(self, append(l.TestImports, l.XTestImports...)),
		}
	}
	return graph
}

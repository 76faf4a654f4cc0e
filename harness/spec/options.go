package spec

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"gopkg.in/yaml.v3"
)

// A server: or client: block holds the experiment's own keys (the fields
// of Server and Client) and the target's settings, which decode into the
// options type the target declares. Which target takes which setting is
// read off those types: a setting no target has is an unknown field, one
// that another target has is refused with the target's own words.

// block is one of the two target blocks: its key in the file, the role
// its targets play, and the union of its targets' option types.
type block struct {
	key    string // "server" or "client"
	role   string // as messages name a target of it: "server", "client"
	schema *schema
	// refusal and exclusive are the targets' own words (targets.Server's
	// Refusal and Exclusive), by target name.
	refusal, exclusive map[string]string
}

// schema is the union of the option types of one block's targets: for
// every setting, by its dotted path ("backoff.initial"), the targets that
// take it, in catalogue order, and what it holds.
type schema struct {
	owners   map[string][]string
	children map[string][]string // path → the names of its settings, sorted; "" the top level
}

var (
	serverBlock = newBlock("server", "server", serverOptions())
	clientBlock = newBlock("client", "client", clientOptions())
)

// optionsOf is a target's name and its options type.
type optionsOf struct {
	name               string
	options            targets.Options
	refusal, exclusive string
}

func serverOptions() []optionsOf {
	var out []optionsOf
	for _, s := range catalog.Servers() {
		out = append(out, optionsOf{s.Name, s.Options(), s.Refusal, s.Exclusive})
	}
	return out
}

func clientOptions() []optionsOf {
	var out []optionsOf
	for _, c := range catalog.Clients() {
		out = append(out, optionsOf{c.Name, c.Options(), c.Refusal, c.Exclusive})
	}
	return out
}

func newBlock(key, role string, all []optionsOf) *block {
	b := &block{key: key, role: role, schema: &schema{owners: map[string][]string{}, children: map[string][]string{}},
		refusal: map[string]string{}, exclusive: map[string]string{}}
	for _, o := range all {
		b.schema.add(reflect.TypeOf(o.options), "", o.name)
		b.refusal[o.name], b.exclusive[o.name] = o.refusal, o.exclusive
	}
	for p, kids := range b.schema.children {
		sort.Strings(kids)
		b.schema.children[p] = slices.Compact(kids)
	}
	return b
}

var durationType = reflect.TypeFor[dur.Duration]()

// add records the settings of options type t under path as target's.
func (s *schema) add(t reflect.Type, path, target string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for name, ft := range yamlFields(t) {
		p := field.Join(path, name)
		s.owners[p] = append(s.owners[p], target)
		s.children[path] = append(s.children[path], name)
		if nested(ft) {
			s.add(ft, p, target)
		}
	}
}

// nested says whether a setting of type t holds settings of its own.
func nested(t reflect.Type) bool {
	if t.Kind() != reflect.Struct || t == durationType {
		return false
	}
	_, custom := reflect.New(t).Interface().(yaml.Unmarshaler)
	return !custom
}

// leaves are the settings target takes that hold no others, in order:
// what a refusal says the target takes.
func (s *schema) leaves(target string) []string {
	var out []string
	for p, owners := range s.owners {
		if slices.Contains(owners, target) && len(s.children[p]) == 0 {
			out = append(out, p)
		}
	}
	sort.Strings(out)
	return out
}

// checkSettings walks the value n of a setting at path (relative to the
// block) against the schema: it records every node for later positions
// and reports a key no target takes. A list's items are recorded by index.
func (b *block) checkSettings(n *yaml.Node, path string, nodes map[string]*yaml.Node, ps *problems) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	nodes[field.Join(b.key, path)] = n
	switch n.Kind {
	case yaml.SequenceNode:
		for i, item := range n.Content {
			nodes[fmt.Sprintf("%s.%s[%d]", b.key, path, i)] = item
		}
	case yaml.MappingNode:
		kids := b.schema.children[path]
		if len(kids) == 0 {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			p := field.Join(path, key.Value)
			if b.schema.owners[p] == nil {
				ps.add(key.Line, key.Column, field.Join(b.key, p), "unknown field (known: %s)", strings.Join(kids, ", "))
				continue
			}
			b.checkSettings(val, p, nodes, ps)
		}
	}
}

// optionBlocks maps the Go types of the target blocks to them, for the
// strict walk of the file (checkStruct).
var optionBlocks = map[reflect.Type]*block{
	reflect.TypeFor[Server](): serverBlock,
	reflect.TypeFor[Client](): clientBlock,
}

// decodeOptions decodes the block's settings into a new value of the
// target's options (newOptions), over their defaults; a nil newOptions (a
// target the catalogue lacks, which validation reports) gives nil.
func (x *Experiment) decodeOptions(b *block, newOptions func() targets.Options, ps *problems) targets.Options {
	if newOptions == nil {
		return nil
	}
	opts := newOptions()
	n := x.nodes[b.key]
	if n == nil || n.Kind != yaml.MappingNode {
		return opts
	}
	if err := n.Decode(opts); err != nil {
		x.typeProblems(err, ps)
	}
	return opts
}

// refuse reports every setting of the block in the file that target does
// not take, with the targets' own words: an exclusive setting in its one
// owner's, any other in the words of the target given it.
func (x *Experiment) refuse(b *block, target string, bad badFunc) {
	var walk func(path string)
	walk = func(path string) {
		n := x.nodes[field.Join(b.key, path)]
		if n == nil || n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := field.Join(path, n.Content[i].Value)
			owners := b.schema.owners[p]
			switch {
			case owners == nil:
			case !slices.Contains(owners, target):
				bad(field.Join(b.key, p), "%s", b.refusalOf(p, target, owners))
			default:
				walk(p)
			}
		}
	}
	walk("")
}

// refusalOf words the refusal of setting p, which owners take, on target.
func (b *block) refusalOf(p, target string, owners []string) string {
	fill := func(s string) string { return strings.ReplaceAll(s, "{target}", target) }
	if len(owners) == 1 {
		if w := b.exclusive[owners[0]]; w != "" {
			return fill(w)
		}
		return fmt.Sprintf("only the %s %s has this knob (%s.target is %s)", owners[0], b.role, b.key, target)
	}
	if w := b.refusal[target]; w != "" {
		return fill(w)
	}
	takes := "none"
	if l := b.schema.leaves(target); len(l) > 0 {
		takes = "only " + strings.Join(l, ", ")
	}
	return fmt.Sprintf("the %s %s does not take this knob (%s)", target, b.role, takes)
}

// validateOptions reports the options' own problems, each at its setting.
func (x *Experiment) validateOptions(b *block, opts targets.Options, bad badFunc) {
	if opts == nil {
		return
	}
	for _, fe := range field.All(opts.Validate()) {
		bad(field.Join(b.key, fe.Field), "%v", fe.Err)
	}
}

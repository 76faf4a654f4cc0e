package spec

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/chaosrun/chaosrun/faults"
	"gopkg.in/yaml.v3"
)

var nodeType = reflect.TypeOf(yaml.Node{})

// paramsKey is a fault's params: mapping. faults.Spec keeps it out of
// yaml decoding (the struct it decodes into depends on the kind), so the
// walk records its node and decodeParams decodes it.
const paramsKey = "params"

// checkKeys walks a YAML value against the Go type it will be decoded into,
// reports every mapping key the type has no field for, and remembers the
// node of every field path so later validation can point at it. yaml.v3's
// Node.Decode ignores KnownFields, hence this walk.
func checkKeys(n *yaml.Node, t reflect.Type, path string, nodes map[string]*yaml.Node, ps *problems) {
	if n == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	nodes[path] = n
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nodeType || t.Kind() == reflect.Interface {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		checkStruct(n, t, path, nodes, ps)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode || t.Elem().Kind() == reflect.Uint8 {
			return
		}
		for i, item := range n.Content {
			checkKeys(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), nodes, ps)
		}
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			checkKeys(n.Content[i+1], t.Elem(), join(path, n.Content[i].Value), nodes, ps)
		}
	}
}

func checkStruct(n *yaml.Node, t reflect.Type, path string, nodes map[string]*yaml.Node, ps *problems) {
	if _, custom := reflect.New(t).Interface().(yaml.Unmarshaler); custom || n.Kind != yaml.MappingNode {
		return
	}
	fields := yamlFields(t)
	b := optionBlocks[t]
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ft, ok := fields[key.Value]
		switch {
		case ok:
			checkKeys(val, ft, join(path, key.Value), nodes, ps)
		case b != nil && b.schema.owners[key.Value] != nil:
			b.checkSettings(val, key.Value, nodes, ps) // a target's setting: which target's, validation says
		default:
			ps.add(key.Line, key.Column, join(path, key.Value), "unknown field (known: %s)", knownList(fields, b))
		}
	}
}

// yamlFields maps the yaml names of a struct's exported fields to their types.
func yamlFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = f.Type
	}
	if t == reflect.TypeFor[faults.Spec]() {
		out[paramsKey] = nodeType
	}
	return out
}

// knownList names the keys of a mapping: the fields of its struct and, for
// a target block, every setting of any of its targets.
func knownList(fields map[string]reflect.Type, b *block) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	if b != nil {
		names = append(names, b.schema.children[""]...)
	}
	sort.Strings(names)
	return strings.Join(slices.Compact(names), ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// decodeParams decodes the params: mapping at path, if the file has one,
// into a fault kind's params struct, strictly: an unknown key is a problem
// like anywhere else. It is the only decode of a fault's params; it
// reports false when it added a problem.
func (x *Experiment) decodeParams(path string, params faults.Params, ps *problems) bool {
	n := x.nodes[path]
	if n == nil {
		return true
	}
	before := len(ps.list)
	checkKeys(n, reflect.TypeOf(params), path, x.nodes, ps)
	if len(ps.list) > before {
		return false
	}
	if err := n.Decode(params); err != nil {
		line, col := x.at(path)
		ps.add(line, col, path, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return false
	}
	return true
}

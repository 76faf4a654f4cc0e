package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

var nodeType = reflect.TypeOf(yaml.Node{})

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
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		ft, ok := fields[key.Value]
		if !ok {
			ps.add(key.Line, key.Column, join(path, key.Value), "unknown field (known: %s)", knownList(fields))
			continue
		}
		checkKeys(val, ft, join(path, key.Value), nodes, ps)
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
	return out
}

func knownList(fields map[string]reflect.Type) string {
	names := make([]string, 0, len(fields))
	for k := range fields {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func reflectType(v any) reflect.Type { return reflect.TypeOf(v) }

package matrix

import (
	"errors"
	"fmt"

	"github.com/chaosrun/chaosrun/harness/spec"
	"gopkg.in/yaml.v3"
)

// cells composes and validates one experiment per scenario, protocol,
// client and server that runs, in table order.
func (c *composer) cells(m *Matrix) []Cell {
	var out []Cell
	for i := range c.file.Scenarios {
		s := &c.file.Scenarios[i]
		for _, p := range m.tableProtocols() {
			for ci, cl := range m.Clients {
				for si, sv := range m.Servers {
					if m.notRun(s.Name, cl, sv, p) {
						continue
					}
					x, err := c.compose(s, &c.file.Clients[ci], &c.file.Servers[si], cl, sv, p)
					var se *spec.Error
					switch {
					case errors.As(err, &se):
						for _, p := range se.Problems {
							c.addProblem(p)
						}
					case err != nil:
						c.add(nil, "", "%v", err)
					default:
						out = append(out, Cell{Scenario: s.Name, Client: cl, Server: sv, Protocol: p, Experiment: x})
					}
				}
			}
		}
	}
	return out
}

// notRun reports whether the cell is one of m.NotRun.
func (m *Matrix) notRun(scenario, client, server, protocol string) bool {
	for _, n := range m.NotRun {
		if n.Scenario == scenario && n.Protocol == protocol && (n.Client == "" || n.Client == client && n.Server == server) {
			return true
		}
	}
	return false
}

// compose builds one cell's experiment from the matrix file's nodes, so a
// problem in it is located in the matrix file. A protocol other than ""
// is the cell's client.protocol, over what the entries say.
func (c *composer) compose(s *Scenario, client, server *yaml.Node, cl, sv, protocol string) (*spec.Experiment, error) {
	f := c.file
	key := Key(cl, sv, protocol)
	root := mapping()
	name := fmt.Sprintf("%s-%s-%s-on-%s", f.Name, s.Name, cl, sv)
	about := fmt.Sprintf("%s client, %s server", cl, sv)
	clientNode := merge(client, &s.Client)
	if protocol != "" {
		name += "-at-" + protocol
		about += " at " + protocol
		at := mapping()
		set(at, "protocol", scalar(protocol))
		clientNode = merge(clientNode, at)
	}
	set(root, "name", scalar(name))
	set(root, "description", scalar(fmt.Sprintf("%s (%s; matrix %s)", s.Description, about, f.Name)))
	setIf(root, "seed", &f.Seed)
	setIf(root, "time_scale", &f.TimeScale)
	set(root, "server", merge(server, &s.Server))
	set(root, "client", clientNode)
	if s.Workload.Kind != 0 {
		set(root, "workload", &s.Workload)
	} else {
		setIf(root, "workload", &f.Workload)
	}
	setIf(root, "faults", &s.Faults)
	expect := f.Expect[s.Name][key]
	set(root, "expect", &expect)
	src, err := yaml.Marshal(root)
	if err != nil {
		return nil, fmt.Errorf("matrix %s: cell %s/%s: %w", f.Name, s.Name, key, err)
	}
	return spec.ParseNode(c.path, root, src)
}

func mapping() *yaml.Node { return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"} }

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// mappingValue returns the value of key in a mapping node, or nil.
func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// set puts key: v in the mapping m, replacing an earlier value.
func set(m *yaml.Node, key string, v *yaml.Node) { setNode(m, scalar(key), v) }

// setNode is set with the key's own node, so its position is kept.
func setNode(m, key, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key.Value {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, key, v)
}

// setIf sets key only when the file gave v.
func setIf(m *yaml.Node, key string, v *yaml.Node) {
	if v.Kind != 0 {
		set(m, key, v)
	}
}

// merge returns a mapping of base's keys overlaid with over's: a scenario's
// settings win over a target's. A part that is not a mapping is kept as is
// for the experiment loader to report.
func merge(base, over *yaml.Node) *yaml.Node {
	if over.Kind == 0 {
		return base
	}
	if base.Kind != yaml.MappingNode || over.Kind != yaml.MappingNode {
		return over
	}
	out := mapping()
	out.Line, out.Column = base.Line, base.Column
	for _, part := range []*yaml.Node{base, over} {
		for i := 0; i+1 < len(part.Content); i += 2 {
			setNode(out, part.Content[i], part.Content[i+1])
		}
	}
	return out
}

package spec

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The tasks modes: off, the 2026-07-28 extension, or the experimental tasks
// of 2025-11-25 (legacy). Which a target runs, it declares.
const (
	TasksOff       = "off"
	TasksExtension = "extension"
	TasksLegacy    = "legacy"
)

// MaxReplicas bounds server.replicas: each is a real process on a machine
// shared with the rest of the run.
const MaxReplicas = 9

// TaskModes are the tasks values.
var TaskModes = []string{TasksOff, TasksExtension, TasksLegacy}

// taskModes is what the loader says of each tasks mode but off: its name
// in a sentence (and its verb), the revision it belongs to, and why a
// server cannot run it at another.
var taskModes = map[string]struct {
	name, are, at string
	speaks        func(protocol string) bool
	serverAt      string
}{
	TasksExtension: {"the tasks extension", "is", mcp.Version20260728, mcp.ModernVersion,
		"the tasks extension is a 2026-07-28 one, and client.protocol is %s"},
	TasksLegacy: {"the 2025-11-25 tasks", "are", mcp.Version20251125, func(p string) bool { return p == mcp.Version20251125 },
		"the legacy tasks are those of 2025-11-25, and client.protocol is %s"},
}

// Protocols lists the client.protocol values, oldest first.
func Protocols() []string {
	return append(slices.Clone(mcp.Versions), mcp.Version20260728)
}

// ServerTargets lists the server targets, the default first.
func ServerTargets() []string {
	return defaultFirst(catalog.DefaultServer, serversWhere(func(targets.Server) bool { return true }))
}

// ClientTargets lists the client targets, the default first.
func ClientTargets() []string {
	return defaultFirst(catalog.DefaultClient, clientsWhere(func(targets.Client) bool { return true }))
}

func defaultFirst(def string, all []string) []string {
	return append([]string{def}, slices.DeleteFunc(all, func(n string) bool { return n == def })...)
}

// serversWhere and clientsWhere name the targets that have a property, in
// catalogue order.
func serversWhere(has func(targets.Server) bool) []string {
	var out []string
	for _, s := range catalog.Servers() {
		if has(s) {
			out = append(out, s.Name)
		}
	}
	return out
}

func clientsWhere(has func(targets.Client) bool) []string {
	var out []string
	for _, c := range catalog.Clients() {
		if has(c) {
			out = append(out, c.Name)
		}
	}
	return out
}

// Unspoken says why the client or server target cannot take part in an
// experiment at protocol ("" when it can, or when protocol is ""), in a few
// words fit for a table cell: "mcp-go does not speak 2026-07-28". A client
// that cannot be told a revision (a program of the user's) speaks what it
// speaks: only 2026-07-28, whose stateless requests it would have to be
// built for, is unspoken.
func Unspoken(client bool, target, protocol string) string {
	var speaks []string
	if client {
		c, ok := catalog.Client(target)
		if !ok || len(c.Protocols) == 0 && !mcp.ModernVersion(protocol) {
			return ""
		}
		speaks = c.Protocols
	} else {
		s, ok := catalog.Server(target)
		if !ok {
			return ""
		}
		speaks = s.Protocols
	}
	if protocol == "" || slices.Contains(speaks, protocol) {
		return ""
	}
	return fmt.Sprintf("%s does not speak %s", target, protocol)
}

// decodeTargets gives each block its target (the default when the file
// names none) and decodes the block's settings into the target's options.
func (x *Experiment) decodeTargets(ps *problems) {
	if x.Server.Target == "" {
		x.Server.Target = catalog.DefaultServer
	}
	if x.Client.Target == "" {
		x.Client.Target = catalog.DefaultClient
	}
	if s, ok := catalog.Server(x.Server.Target); ok {
		x.Server.Options = x.decodeOptions(serverBlock, s.Options, ps)
	}
	if c, ok := catalog.Client(x.Client.Target); ok {
		x.Client.Options = x.decodeOptions(clientBlock, c.Options, ps)
	}
}

func (x *Experiment) validateServer(bad badFunc, oneOf oneOfFunc) {
	s := x.Server
	switch {
	case s.Replicas < 1 || s.Replicas > MaxReplicas:
		bad("server.replicas", "must be between 1 and %d, got %d", MaxReplicas, s.Replicas)
	case s.Replicas > 1 && x.Balancer == nil:
		bad("server.replicas", "%d replicas need a balancer: block to spread the requests over them", s.Replicas)
	}
	oneOf("server.tasks", s.Tasks, TaskModes)
	d, ok := catalog.Server(s.Target)
	if !ok {
		oneOf("server.target", s.Target, ServerTargets())
		return
	}
	if _, set := x.nodes["server.tasks"]; set {
		switch {
		case len(d.TaskModes) == 0:
			bad("server.tasks", "only the %s servers run tasks (server.target is %s)",
				list(serversWhere(func(s targets.Server) bool { return len(s.TaskModes) > 0 })), s.Target)
		case s.Tasks != TasksOff && slices.Contains(TaskModes, s.Tasks) && !slices.Contains(d.TaskModes, s.Tasks):
			bad("server.tasks", "the %s server runs only %s: use %s", s.Target, modeNames(d.TaskModes), strings.Join(d.TaskModes, " or "))
		}
	}
	x.refuse(serverBlock, s.Target, bad)
	x.validateOptions(serverBlock, s.Options, bad)
	for _, n := range wanted(s.Options) {
		if n.What == targets.NeedFixedAddress && s.Replicas > 1 {
			bad("server."+n.Field, "a fixed address serves one replica, and server.replicas is %d: let each take its own ({addr}, {port})", s.Replicas)
		}
	}
}

// modeNames names task modes in a sentence: "the 2025-11-25 tasks".
func modeNames(modes []string) string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = taskModes[m].name
	}
	return strings.Join(out, " and ")
}

// wanted are the needs the options ask for.
func wanted(o targets.Options) []targets.Need {
	var out []targets.Need
	for _, n := range needs(o) {
		if n.Wanted {
			out = append(out, n)
		}
	}
	return out
}

// needs are all the needs the options declare, asked for or not.
func needs(o targets.Options) []targets.Need {
	if n, ok := o.(targets.Needer); ok {
		return n.Needs()
	}
	return nil
}

func (x *Experiment) validateClient(bad badFunc, oneOf oneOfFunc) {
	c := x.Client
	if versions := Protocols(); !slices.Contains(versions, c.Protocol) {
		bad("client.protocol", "must be one of %s, got %q", strings.Join(versions, ", "), c.Protocol)
	}
	oneOf("client.tasks", c.Tasks, TaskModes)
	d, ok := catalog.Client(c.Target)
	if !ok {
		oneOf("client.target", c.Target, ClientTargets())
		return
	}
	if _, set := x.nodes["client.protocol"]; set && len(d.Protocols) == 0 {
		why := cmp.Or(d.Refusal, "the {target} client is told no revision")
		bad("client.protocol", "%s", strings.ReplaceAll(why, "{target}", c.Target))
	}
	if mcp.ModernVersion(c.Protocol) {
		x.validateModern(bad)
	}
	x.validateTasks(bad, d)
	x.refuse(clientBlock, c.Target, bad)
	x.validateOptions(clientBlock, c.Options, bad)
}

// validateTasks checks the tasks modes against the targets and the
// protocol.
func (x *Experiment) validateTasks(bad badFunc, d targets.Client) {
	c := x.Client
	if m, ok := taskModes[c.Tasks]; ok && (!m.speaks(c.Protocol) || !slices.Contains(d.TaskModes, c.Tasks)) {
		speakers := clientsWhere(func(cl targets.Client) bool { return slices.Contains(cl.TaskModes, c.Tasks) })
		bad("client.tasks", "%s %s spoken by the %s at %s (client.target is %s, client.protocol %s)",
			m.name, m.are, plural(speakers, "client"), m.at, c.Target, c.Protocol)
	}
	if m, ok := taskModes[x.Server.Tasks]; ok && !m.speaks(c.Protocol) {
		bad("server.tasks", m.serverAt, c.Protocol)
	}
}

// plural names targets of a role: "the resumable client", "the naive and
// resumable clients".
func plural(names []string, role string) string {
	if len(names) == 1 {
		return names[0] + " " + role
	}
	return list(names) + " " + role + "s"
}

// validateModern checks what an experiment at 2026-07-28 can ask of its
// targets: a client and a server that speak it. (Its faults say
// themselves whether they need a session: see validateFaults.)
func (x *Experiment) validateModern(bad badFunc) {
	v := x.Client.Protocol
	why := func(unspoken string) string {
		if unspoken != "" {
			return unspoken
		}
		return "it speaks the session revisions only"
	}
	if c, ok := catalog.Client(x.Client.Target); ok && !slices.Contains(c.Protocols, v) && len(c.Protocols) > 0 {
		speakers := clientsWhere(func(c targets.Client) bool { return slices.Contains(c.Protocols, v) })
		bad("client.protocol", "%s is spoken by the %s clients, not by the %s client adapter (%s)", v, list(speakers), c.Name, why(c.Unspoken))
	}
	if s, ok := catalog.Server(x.Server.Target); ok && !slices.Contains(s.Protocols, v) {
		speakers := serversWhere(func(s targets.Server) bool { return slices.Contains(s.Protocols, v) })
		bad("server.target", "client.protocol is %s, which the %s server adapter does not speak (%s; use %s)", v, s.Name, why(s.Unspoken), strings.Join(speakers, ", "))
	}
}

// list joins names as a sentence does: "a, b and c".
func list(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// roleBalancer is the balancer as a process fault names it; agents are
// named by their roles, and any other role is a program the server's
// options ask the runner for (redis).
const roleBalancer = "balancer"

// agentRoles are the roles of the agents every experiment has.
var agentRoles = []string{"server", "client", "ledger", "proxy"}

// validateFaults decodes each fault's params into its kind's params
// struct, which the experiment keeps (an absent mapping keeps the zero
// params), and validates the params and the repeat block: the one
// validation a fault gets, since the runner trusts what was loaded. What a
// fault needs of the experiment it says through the optional interfaces of
// package faults (faults.Targeted, faults.Controlled).
func (x *Experiment) validateFaults(bad badFunc, ps *problems) {
	for i := range x.Faults {
		f := &x.Faults[i]
		p := fmt.Sprintf("faults[%d]", i)
		params, err := faults.NewParams(f.Kind)
		if err != nil {
			bad(p+".kind", "%v", err)
			continue
		}
		if !x.decodeParams(p+".params", params, ps) {
			continue
		}
		f.Params = params
		fieldProblems(bad, p+".params", params.Validate())
		if t, ok := params.(faults.Targeted); ok {
			x.validateTarget(bad, p, t.Target())
		}
		if c, ok := params.(faults.Controlled); ok {
			x.validateControl(bad, p, f.Kind, c.Control())
		}
		if r := f.Repeat; r != nil {
			fieldProblems(bad, p+".repeat", r.Validate())
		}
		if w := f.When; w != nil {
			fieldProblems(bad, p+".when", w.Validate(i, len(x.Faults)))
		}
	}
}

// fieldProblems reports each problem of err at its field under path.
func fieldProblems(bad badFunc, path string, err error) {
	for _, fe := range field.All(err) {
		bad(field.Join(path, fe.Field), "%v", fe.Err)
	}
}

// validateTarget checks that the process a fault acts on is in the
// experiment: the balancer when there is one, a program the server's
// options ask for, a replica the server has.
func (x *Experiment) validateTarget(bad badFunc, p string, t faults.Target) {
	switch role := t.Role; {
	case slices.Contains(agentRoles, role):
	case role == roleBalancer:
		switch {
		case x.Balancer == nil:
			bad(p+".params.role", "there is no balancer: add a balancer: block")
		case x.Balancer.Kind == balancer.Service:
			bad(p+".params.role", "a balancer of kind service is no process to crash or pause: it is the cluster's "+
				"kube-proxy rules, which live on every node; fault a replica (role: server, replica: N) instead")
		}
	default:
		x.validateProgram(bad, p, role)
	}
	if t.Replica > x.Server.Replicas {
		bad(p+".params.replica", "the server has %d replica(s) (server.replicas), not %d", x.Server.Replicas, t.Replica)
	}
}

// validateProgram checks that a fault's role is a program the server's
// options ask the runner to start (redis for a store kept in it), naming
// the settings that would ask for it.
func (x *Experiment) validateProgram(bad badFunc, p, role string) {
	var fields, values []string
	for _, n := range needs(x.Server.Options) {
		if n.What != role {
			continue
		}
		if n.Wanted {
			return
		}
		fields, values = append(fields, "server."+n.Field), append(values, n.Value)
	}
	if len(fields) == 0 {
		bad(p+".params.role", "there is no %s: the %s server asks for none", role, x.Server.Target)
		return
	}
	bad(p+".params.role", "%s runs only with %s %s (they are %s)", role, strings.Join(fields, " or "), role, strings.Join(values, " and "))
}

// validateControl checks a fault that acts through the server's control
// endpoint: one server that answers the action, with sessions or tasks
// when the action acts on them.
func (x *Experiment) validateControl(bad badFunc, p, kind string, c faults.Control) {
	if x.Server.Replicas > 1 {
		bad(p+".kind", "%s reaches one server through its control endpoint, and server.replicas is %d: it would act on replica 1 alone", kind, x.Server.Replicas)
	}
	if c.Sessions && mcp.ModernVersion(x.Client.Protocol) {
		bad(p+".kind", "%s needs a session, and there are none at %s (client.protocol)", kind, x.Client.Protocol)
	}
	s, ok := catalog.Server(x.Server.Target)
	if !ok {
		return
	}
	answers := s.Controls == nil || slices.Contains(s.Controls, c.Action)
	switch {
	case c.Tasks && (x.Server.Tasks == TasksOff || !answers):
		stores := serversWhere(func(s targets.Server) bool { return len(s.TaskModes) > 0 && slices.Contains(s.Controls, c.Action) })
		var modes []string
		for _, name := range stores {
			d, _ := catalog.Server(name)
			modes = append(modes, d.TaskModes...)
		}
		bad(p+".kind", "%s needs the %s server's task store: set server.tasks: %s", kind, list(stores), strings.Join(slices.Compact(modes), " or "))
	case !answers:
		bad(p+".kind", "%s needs a server whose control endpoint answers %s, and the %s server's does not", kind, c.Action, s.Name)
	}
}

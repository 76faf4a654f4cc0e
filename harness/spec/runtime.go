package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/targets"
)

// CheckRuntime reports, as input errors located at the setting that asks
// for it, whatever in the experiment the runtime rt cannot run, as its
// capabilities say: a server image, a fixed listen address, a program the
// runner starts beside the agents (a balancer, redis), a pause, a program
// of the user's (a target command). known are
// the capabilities of every runtime there is, so that a refusal can say
// where the experiment would run; rt among them is skipped.
func (x *Experiment) CheckRuntime(rt agent.Capabilities, known []agent.Capabilities) error {
	ps := &problems{file: x.Path}
	refuse := func(path, subject, capability string, has func(agent.Capabilities) bool) {
		if has(rt) {
			return
		}
		line, col := x.at(path)
		ps.add(line, col, path, "%s", refusal(subject, capability, rt, known, has))
	}
	for _, b := range []struct {
		key  string
		opts targets.Options
	}{{"server", x.Server.Options}, {"client", x.Client.Options}} {
		for _, n := range wanted(b.opts) {
			subject, capability, has := need(n.What)
			refuse(b.key+"."+n.Field, subject, capability, has)
		}
		if c, ok := b.opts.(targets.Commanded); ok {
			if prog, field := c.Program(); prog != "" {
				refuse(b.key+"."+field, "a program of your own ("+prog+")", agent.CapPrograms,
					func(c agent.Capabilities) bool { return c.Programs })
			}
		}
	}
	if bl := x.Balancer; bl != nil && bl.Kind == balancer.Service {
		refuse("balancer.kind", "a balancer of kind service (a Kubernetes Service)", agent.CapServices,
			func(c agent.Capabilities) bool { return c.Services })
	} else if bl != nil {
		refuse("balancer", fmt.Sprintf("a balancer (%s)", bl.Kind), agent.CapDaemons, daemon(bl.Kind))
	}
	for i, f := range x.Faults {
		if t, ok := f.Params.(faults.Targeted); ok && t.Target().Freezes {
			refuse(fmt.Sprintf("faults[%d].kind", i), f.Kind, agent.CapPause, func(c agent.Capabilities) bool { return c.Pause })
		}
	}
	return ps.err()
}

// need says what a target's need is called in a refusal, which
// capability answers it, and whether a runtime has it.
func need(what string) (subject, capability string, has func(agent.Capabilities) bool) {
	switch what {
	case targets.NeedImage:
		return "image", agent.CapImages, func(c agent.Capabilities) bool { return c.Images }
	case targets.NeedFixedAddress:
		return "a fixed address", agent.CapFixedAddresses, func(c agent.Capabilities) bool { return c.FixedAddresses }
	}
	return what, agent.CapDaemons, daemon(what)
}

func daemon(name string) func(agent.Capabilities) bool {
	return func(c agent.Capabilities) bool { return slices.Contains(c.Daemons, name) }
}

// refusal words what rt cannot run: where it runs instead, if anywhere,
// and the runtime's reason.
func refusal(subject, capability string, rt agent.Capabilities, known []agent.Capabilities, has func(agent.Capabilities) bool) string {
	var where []string
	for _, k := range known {
		if k.Runtime != rt.Runtime && has(k) {
			where = append(where, k.Runtime)
		}
	}
	msg := fmt.Sprintf("%s does not run on the %s runtime", subject, rt.Runtime)
	if len(where) > 0 {
		ws := strings.Join(where, " or ")
		msg = fmt.Sprintf("%s runs only on the %s runtime (--runtime %s), not on %s", subject, ws, ws, rt.Runtime)
	}
	if why := rt.Why[capability]; why != "" {
		msg += ": " + why
	}
	return msg
}

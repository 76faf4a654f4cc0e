package spec

import (
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/docker"
	"github.com/chaosrun/chaosrun/harness/local"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/server"
)

func matchingVerdict() check.Verdict {
	return check.Verdict{
		Verdict:    check.Fail,
		Violations: []string{check.NoDuplicateSideEffects, check.NoSessionFork},
		Figures:    check.Figures{Duplicates: 2, Forks: 1},
	}
}

// runtimes are the runtimes there are, as `chaosrun run` checks against
// them.
var runtimes = []agent.Capabilities{local.Capabilities(), docker.Capabilities()}

// checkRuntime checks x against the runtime named name.
func checkRuntime(x *Experiment, name string) error {
	for _, c := range runtimes {
		if c.Runtime == name {
			return x.CheckRuntime(c, runtimes)
		}
	}
	panic("no runtime " + name)
}

// The options of the targets, as the experiment holds them.
func referenceOptions(x *Experiment) *server.Options    { return x.Server.Options.(*server.Options) }
func theClientOptions(o any) *client.Options            { return o.(*client.Options) }
func clientCommand(o any) *catalog.ClientCommandOptions { return o.(*catalog.ClientCommandOptions) }

// fixedAddress is server.listen of a command target, "" for any other.
func fixedAddress(x *Experiment) string {
	if c, ok := x.Server.Options.(*catalog.CommandOptions); ok {
		return c.Listen
	}
	return ""
}

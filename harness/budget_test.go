package harness

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// limitedRuntime is a runtime whose agents may open limit files; it starts
// nothing.
type limitedRuntime struct {
	agent.Runtime
	limit uint64
}

func (r limitedRuntime) Capabilities() agent.Capabilities {
	return agent.Capabilities{OpenFiles: r.limit}
}

func plan(clients int, client string, fs ...faults.Injection) *spec.Plan {
	return &spec.Plan{Template: workload.Template{Clients: clients}, Client: spec.ClientPlan{Target: client}, Faults: fs}
}

func TestProxyAgents(t *testing.T) {
	restartProxy := faults.Injection{Kind: "restart", Params: &faults.Restart{Role: agent.RoleProxy}}
	restartServer := faults.Injection{Kind: "restart", Params: &faults.Restart{Role: agent.RoleServer}}
	tenthCall := faults.Injection{Kind: "reset", Trigger: &trigger.Trigger{Event: trigger.EventToolsCall, Nth: 10}}
	tenthEvent := faults.Injection{Kind: "reset", Trigger: &trigger.Trigger{Event: trigger.EventSSEEvent, Nth: 10}}
	tests := []struct {
		name string
		rt   agent.Runtime
		plan *spec.Plan
		want int    // proxy agents, when the workload fits
		err  string // "" when it fits
	}{
		{"one proxy carries what fits", limitedRuntime{limit: 20000}, plan(3000, targets.Resumable), 1, ""},
		{"the most one proxy carries", limitedRuntime{limit: 20000}, plan(3290, targets.Resumable), 1, ""},
		{"ten thousand in twenty thousand files are spread over four", limitedRuntime{limit: 20000}, plan(10000, targets.Resumable), 4, ""},
		{"a process fault elsewhere does not keep them together", limitedRuntime{limit: 20000}, plan(10000, targets.Resumable, restartServer), 4, ""},
		{"the nth event of one call's stream is seen whole", limitedRuntime{limit: 20000}, plan(10000, targets.Resumable, tenthEvent), 4, ""},
		{"the nth call would be counted in one share", limitedRuntime{limit: 20000}, plan(10000, targets.Resumable, tenthCall), 0,
			"a trigger's nth would count in one of the 4 proxy agents they need"},
		{"the client agent must fit alone", limitedRuntime{limit: 20000}, plan(20000, targets.Resumable), 0,
			"the client agent alone needs about 20256 (1 for each client)"},
		{"the limit and the proxy's share are named", limitedRuntime{limit: 20000}, plan(20000, targets.Resumable), 0,
			"20000 clients keep 20000 connections through the proxy agent, which holds 6 descriptors for each"},
		{"a command client takes one endpoint", limitedRuntime{limit: 20000}, plan(10000, targets.Command), 0,
			"a command client takes one endpoint, so they cannot be spread over 4 proxy agents"},
		{"a process fault on the proxy would reach one", limitedRuntime{limit: 20000}, plan(10000, targets.Resumable, restartProxy), 0,
			"at most 3290 clients fit in one proxy agent, and a process fault on the proxy would reach one of the 4"},
		{"a small limit is named", limitedRuntime{limit: 1024}, plan(1000, targets.Resumable), 0,
			"agents here may open 1024"},
		{"six proxy agents at most", limitedRuntime{limit: 1024}, plan(768, targets.Resumable), 6, ""},
		{"a runtime without a shared limit is not checked", noLimitRuntime{}, plan(100000, targets.Command), 1, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n, err := proxyAgents(tc.rt, tc.plan)
			if tc.err == "" {
				assert.NoError(t, err)
				assert.Equal(t, tc.want, n)
				return
			}
			assert.ErrorContains(t, err, tc.err)
		})
	}
}

func TestSessionsFitting(t *testing.T) {
	assert.Equal(t, 19744, SessionsFitting(20000), "the client and server agents bound it, not the proxies")
	assert.Equal(t, 0, SessionsFitting(100))
}

type noLimitRuntime struct{}

func (noLimitRuntime) Start(context.Context, agent.Spec) (agent.Process, error) { return nil, nil }
func (noLimitRuntime) Close() error                                             { return nil }
func (noLimitRuntime) Capabilities() agent.Capabilities                         { return agent.Capabilities{} }

package harness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
)

func TestServerArgsGiveABringYourOwnServerOnlyItsEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		server spec.ServerPlan
		args   []string
		image  string
	}{
		{"command", spec.ServerPlan{Target: "command", Command: []string{"./srv", "-v", "--port=1"}, RetentionEvents: 1000},
			[]string{"--target", "command", "--command=./srv", "--command=-v", "--command=--port=1"}, ""},
		{"image", spec.ServerPlan{Target: "image", Image: "me/srv:1", RetentionEvents: 1000},
			[]string{"--target", "image"}, "me/srv:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serverSpec(&spec.Plan{Server: tc.server}, "http://ledger:8080")
			assert.Equal(t, agent.RoleServer, s.Role)
			assert.Equal(t, tc.args, s.Args)
			assert.Equal(t, "http://ledger:8080", s.LedgerURL, "the ledger is the runtime's to pass on, as a flag or in the environment")
			assert.Equal(t, tc.image, s.Image)
		})
	}
	ref := serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "reference", RetentionEvents: 7, OnUnresumable: "gone"}}, "http://l")
	assert.Subset(t, ref.Args, []string{"--retention-events", "7", "--on-unresumable", "gone"}, "the built-in servers get their knobs")
	assert.Empty(t, ref.Image)

	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		sdk := serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "go-sdk"}, Client: spec.ClientPlan{Protocol: protocol}}, "http://l")
		if protocol == "2026-07-28" {
			assert.Contains(t, sdk.Args, "--stateless", "the go-sdk server speaks 2026-07-28 only when stateless")
		} else {
			assert.NotContains(t, sdk.Args, "--stateless")
		}
	}
}

func TestClientArgsStayShortWhateverTheNumberOfClients(t *testing.T) {
	x, err := spec.Parse("x.yaml", []byte(`name: many
description: The most clients an experiment may have.
workload:
  clients: 100000
  calls:
    - {tool: charge, args: {amount_cents: 1}, duration: 1s}
    - {tool: chatty, args: {events: 5}, duration: 1s}
expect: {verdict: pass}
`))
	if !assert.NoError(t, err) {
		return
	}
	p := x.Plan(spec.Overrides{})
	assert.Equal(t, spec.MaxClients, p.Template.Clients)
	longest := 0
	for _, a := range clientArgs(p, []string{"http://proxy:8666/mcp"}) {
		longest = max(longest, len(a))
	}
	assert.Less(t, longest, 4096, "one argument must stay far below Linux's 128 KiB limit")
}

func TestBalancerEntryIsAStandingFaultOverTheWorkload(t *testing.T) {
	b := &spec.BalancerPlan{Kind: "nginx", Balance: "source", ProxyReadTimeout: 3 * time.Second, KeepaliveTimeout: 3750 * time.Millisecond}
	e := balancerEntry(b, 2, time.Second, 9*time.Second)
	assert.Equal(t, 2, e.Index, "after the experiment's own faults")
	assert.Equal(t, "balancer", e.Kind)
	assert.Equal(t, "nginx", e.Target)
	assert.Equal(t, int64(1e6), e.StartUS)
	assert.Equal(t, int64(9e6), e.EndUS)
	assert.Equal(t, map[string]any{"balance": "source", "proxy_read_timeout": "3s", "keepalive_timeout": "3.75s"}, e.Params)
	assert.Contains(t, e.Detail, "proxy_read_timeout 3s, keepalive_timeout 3.75s")
}

func TestReplicaNames(t *testing.T) {
	assert.Equal(t, "server", replicaName(1, 1), "one replica keeps the folders of a one-server run")
	assert.Equal(t, "server-1", replicaName(1, 3))
	assert.Equal(t, "server-3", replicaName(3, 3))
}

func TestProxyNames(t *testing.T) {
	assert.Equal(t, "proxy", proxyName(1, 1), "one proxy agent keeps the folders of a one-proxy run")
	assert.Equal(t, "proxy-1", proxyName(1, 4))
	assert.Equal(t, "proxy-4", proxyName(4, 4))
}

func TestClientArgsNameEveryEndpoint(t *testing.T) {
	p := &spec.Plan{Client: spec.ClientPlan{Target: "resumable"}}
	args := clientArgs(p, []string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"})
	assert.Equal(t, []string{"--target", "resumable", "--endpoint", "http://127.0.0.1:1/mcp", "--endpoint", "http://127.0.0.1:2/mcp"}, args[:6])
}

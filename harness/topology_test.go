package harness

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/server"
)

// serverConfig is the configuration a server spec gives its agent.
func serverConfig(t *testing.T, s agent.Spec) roles.ServerConfig {
	t.Helper()
	var cfg roles.ServerConfig
	require.NoError(t, json.Unmarshal(s.Config, &cfg), "%s", s.Config)
	return cfg
}

func TestServerSpecGivesABringYourOwnServerOnlyItsEnvironment(t *testing.T) {
	command := &catalog.CommandOptions{Command: []string{"./srv", "-v", "--port=1"}}
	s, err := serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "command", Options: command}}, "http://ledger:8080", serverShared{})
	require.NoError(t, err)
	assert.Equal(t, agent.RoleServer, s.Role)
	assert.Equal(t, "http://ledger:8080", s.LedgerURL, "the ledger is the runtime's to pass on, as a flag or in the environment")
	assert.Equal(t, "./srv", s.Program, "the program, for a runtime that copies it into a container")
	assert.Empty(t, s.Args)
	assert.Equal(t, command, serverConfig(t, s).Options, "its command is all its configuration holds")

	s, err = serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "image", Options: &catalog.ImageOptions{Image: "me/srv:1"}}}, "http://l", serverShared{})
	require.NoError(t, err)
	assert.Equal(t, "me/srv:1", s.Image)
	assert.Nil(t, s.Config, "an image runs in the agent's place: there is no agent to configure")
}

func TestServerSpecConfiguresTheServer(t *testing.T) {
	opts := server.DefaultOptions()
	opts.RetentionEvents, opts.OnUnresumable = 7, "silent_head"
	s, err := serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "reference", Tasks: "legacy", Options: opts}, Client: spec.ClientPlan{Protocol: "2025-11-25"}},
		"http://l", serverShared{redis: "127.0.0.1:6379", owner: "server-2"})
	require.NoError(t, err)
	assert.Empty(t, s.Image)
	assert.Empty(t, s.Args, "no setting goes as a flag")
	cfg := serverConfig(t, s)
	assert.Equal(t, roles.ServerConfig{Target: "reference", Tasks: "legacy", Protocol: "2025-11-25", Options: opts, Redis: "127.0.0.1:6379", Owner: "server-2"}, cfg,
		"the agent reads back what the runner wrote, options in their own type")
}

func TestClientSpecStaysSmallWhateverTheNumberOfClients(t *testing.T) {
	x, err := spec.Parse("x.yaml", []byte(`name: many
description: The most clients an experiment may have.
workload:
  clients: 100000
  calls:
    - {tool: charge, args: {amount_cents: 1}, duration: 1s}
    - {tool: chatty, args: {events: 5}, duration: 1s}
expect: {verdict: pass}
`))
	require.NoError(t, err)
	p := x.Plan(spec.Overrides{})
	assert.Equal(t, spec.MaxClients, p.Template.Clients)
	s, err := clientSpec(p, []string{"http://proxy:8666/mcp"})
	require.NoError(t, err)
	assert.Less(t, len(s.Config), 4096, "the workload is a template: its size does not grow with the clients")
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

func TestClientSpecNamesEveryEndpoint(t *testing.T) {
	p := &spec.Plan{Seed: 7, Client: spec.ClientPlan{Target: "resumable", Protocol: "2025-11-25", Tasks: "off", Options: client.DefaultOptions("resumable")}}
	s, err := clientSpec(p, []string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"})
	require.NoError(t, err)
	var cfg roles.ClientConfig
	require.NoError(t, json.Unmarshal(s.Config, &cfg))
	assert.Equal(t, []string{"http://127.0.0.1:1/mcp", "http://127.0.0.1:2/mcp"}, cfg.Endpoints)
	assert.Equal(t, int64(7), cfg.Seed)
	assert.Equal(t, p.Client.Options, cfg.Options)
	assert.Empty(t, s.Program)
}

package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/server"
)

// withBalancer is good with a balancer: block after the client's.
func withBalancer(block string) string {
	return strings.Replace(good, "workload:\n", block+"workload:\n", 1)
}

func TestBalancerScalesAndDefaults(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  BalancerPlan
	}{
		{"nginx defaults are nginx's, scaled", "balancer: {kind: nginx}\n",
			BalancerPlan{Kind: "nginx", Balance: "roundrobin", ProxyReadTimeout: 3 * time.Second, ProxyBuffering: true,
				KeepaliveTimeout: 3750 * time.Millisecond}},
		{"nginx settings", "balancer: {kind: nginx, proxy_read_timeout: 30s, proxy_buffering: off, keepalive_timeout: 10s, balance: source}\n",
			BalancerPlan{Kind: "nginx", Balance: "source", ProxyReadTimeout: 1500 * time.Millisecond, KeepaliveTimeout: 500 * time.Millisecond}},
		{"haproxy defaults", "balancer: {kind: haproxy}\n",
			BalancerPlan{Kind: "haproxy", Balance: "roundrobin", TimeoutServer: 3 * time.Second, TimeoutClient: 3 * time.Second}},
		{"haproxy settings", "balancer:\n  kind: haproxy\n  balance: header Mcp-Session-Id\n  timeout_server: 60s\n  timeout_client: 2m\n  timeout_tunnel: 1h\n",
			BalancerPlan{Kind: "haproxy", Balance: "header Mcp-Session-Id", TimeoutServer: 3 * time.Second, TimeoutClient: 6 * time.Second,
				TimeoutTunnel: 180 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x, err := Parse("x.yaml", []byte(withBalancer(tt.block)))
			require.NoError(t, err)
			p := x.Plan(Overrides{})
			require.NotNil(t, p.Balancer)
			assert.Equal(t, tt.want, *p.Balancer)
		})
	}
	x, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	assert.Nil(t, x.Plan(Overrides{}).Balancer, "no balancer: block, no balancer")
}

func TestBalancerProblemsNameFileLineAndField(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  string
	}{
		{"kind required", "balancer: {balance: source}\n", "x.yaml:11:11: balancer.kind: is required: one of nginx, haproxy"},
		{"unknown kind", "balancer: {kind: traefik}\n", "x.yaml:11:18: balancer.kind: must be one of nginx, haproxy, service, got \"traefik\""},
		{"unknown method", "balancer: {kind: nginx, balance: leastconn}\n", "x.yaml:11:34: balancer.balance: must be one of roundrobin, source, header Mcp-Session-Id"},
		{"haproxy setting on nginx", "balancer: {kind: nginx, timeout_server: 60s}\n", "x.yaml:11:41: balancer.timeout_server: is not a setting of nginx"},
		{"nginx setting on haproxy", "balancer: {kind: haproxy, proxy_read_timeout: 60s}\n", "x.yaml:11:47: balancer.proxy_read_timeout: is not a setting of haproxy"},
		{"zero timeout", "balancer: {kind: nginx, proxy_read_timeout: 0s}\n", "x.yaml:11:45: balancer.proxy_read_timeout: must be positive, got 0s"},
		{"unknown setting", "balancer: {kind: nginx, proxy_read_timout: 60s}\n", "x.yaml:11:25: balancer.proxy_read_timout: unknown field (known: balance, keepalive_timeout, kind,"},
		{"bad duration", "balancer: {kind: haproxy, timeout_client: soon}\n", "x.yaml:11:43: balancer.timeout_client: \"soon\" is not a duration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(withBalancer(tt.block)))
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestBalancerRunsOnlyOnTheLocalRuntime(t *testing.T) {
	x, err := Parse("x.yaml", []byte(withBalancer("balancer: {kind: haproxy}\n")))
	require.NoError(t, err)
	require.NoError(t, checkRuntime(x, "local"))
	err = checkRuntime(x, "docker")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "x.yaml:11:11: balancer: a balancer (haproxy) runs only on the local runtime")
}

func TestRedisStoreRunsOnlyOnTheLocalRuntime(t *testing.T) {
	src := strings.Replace(withBalancer("balancer: {kind: nginx}\n"), "  retention_events: 100\n", "  retention_events: 100\n  replicas: 2\n  event_store: redis\n", 1)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	assert.Equal(t, "redis", x.Plan(Overrides{}).Server.Options.(*server.Options).EventStore)
	require.NoError(t, checkRuntime(x, "local"))
	err = checkRuntime(x, "docker")
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "x.yaml:8:16: server.event_store: redis runs only on the local runtime")
	assert.Contains(t, err.Error(), "balancer: a balancer (nginx) runs only on the local runtime")
}

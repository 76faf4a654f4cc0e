package spec

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplicas(t *testing.T) {
	x, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	assert.Equal(t, 1, x.Plan(Overrides{}).Server.Replicas, "defaulted")

	three := strings.Replace(withBalancer("balancer: {kind: nginx, balance: source}\n"), "  retention_events: 100\n", "  retention_events: 100\n  replicas: 3\n", 1)
	crash := strings.Replace(three, "  - {kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}}",
		"  - {kind: crash, at: 30s, params: {role: server, replica: 3, down: 1m}}", 1)
	x, err = Parse("x.yaml", []byte(crash))
	require.NoError(t, err)
	p := x.Plan(Overrides{})
	assert.Equal(t, 3, p.Server.Replicas)
	assert.Equal(t, 3*time.Second, p.Faults[0].Window, "down scales into the crash's window")

	tests := []struct {
		name, src, want string
	}{
		{"replicas need a balancer", strings.Replace(good, "  retention_events: 100\n", "  retention_events: 100\n  replicas: 2\n", 1),
			"x.yaml:7:13: server.replicas: 2 replicas need a balancer: block"},
		{"too many", strings.Replace(three, "replicas: 3", "replicas: 10", 1), "server.replicas: must be between 1 and 9, got 10"},
		{"a replica the server lacks", strings.Replace(crash, "replica: 3", "replica: 4", 1),
			"faults[0].params.replica: the server has 3 replica(s) (server.replicas), not 4"},
		{"redis without the redis store", strings.Replace(crash, "role: server, replica: 3", "role: redis", 1),
			"faults[0].params.role: redis runs only with server.event_store or server.task_store redis (they are memory and memory)"},
		{"a balancer fault without a balancer", strings.Replace(good, "  - {kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}}",
			"  - {kind: crash, at: 30s, params: {role: balancer}}", 1),
			"faults[0].params.role: there is no balancer: add a balancer: block"},
		{"a replica of the client", strings.Replace(crash, "role: server, replica: 3", "role: client, replica: 1", 1),
			"faults[0].params.replica: only the server has replicas, not the client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("x.yaml", []byte(tt.src))
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

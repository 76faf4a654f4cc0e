package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/check"
)

// TestKubeBalancesReplicasByAService runs the experiments of
// experiments/kubernetes on the cluster: three server replicas behind a
// Service, one of them crashed. Each meets its expectation, the crash
// broke calls in flight (the expectations ask for it), and nothing of the
// run is left in the cluster.
func TestKubeBalancesReplicasByAService(t *testing.T) {
	f := needKube(t)
	files, err := filepath.Glob("../../experiments/kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := t.TempDir()
	code, dir, _ := kubeRun(context.Background(), t, f, out, append([]string{"--parallel", "2"}, files...)...)
	assert.Equal(t, exitMet, code)
	run := runOf(t, dir)
	require.Len(t, run.Results, len(files))
	for _, x := range run.Results {
		assert.True(t, x.Met, "%s: %v %s", x.Name, x.Reasons, x.Error)
		v, err := check.LoadVerdict(filepath.Join(dir, x.Name, check.VerdictFile))
		require.NoError(t, err)
		assert.Positive(t, v.Figures.CallsUnknown+v.Figures.BlindRetries, "%s: the crash of replica 2 broke no call", x.Name)
		t.Logf("%s: %s %v %+v", x.Name, v.Verdict, v.Violations, v.Figures)
	}
	assert.Empty(t, namespacesOf(t, f, run.ID))
}

// TestServiceBalancerIsRefusedWhereItCannotRun: a balancer of kind
// service runs only on the kubernetes runtime, which runs no nginx or
// HAProxy; a Service takes no nginx or HAProxy setting, balances by
// connection only, and is no process a fault can crash.
func TestServiceBalancerIsRefusedWhereItCannotRun(t *testing.T) {
	service := "server: {replicas: 3}\nbalancer: {kind: service}\nclient:"
	tests := []struct {
		name, runtime, with, want string
		crash                     bool // the balancer crashes too (faults[0])
	}{
		{"a service on the local runtime", "local", service,
			":5:18: balancer.kind: a balancer of kind service (a Kubernetes Service) runs only on the kubernetes runtime (--runtime kubernetes), not on local", false},
		{"a service on the docker runtime", "docker", service,
			":5:18: balancer.kind: a balancer of kind service (a Kubernetes Service) runs only on the kubernetes runtime (--runtime kubernetes), not on docker", false},
		{"nginx on the kubernetes runtime", "kubernetes", "server: {replicas: 3}\nbalancer: {kind: nginx}\nclient:",
			"balancer: a balancer (nginx) runs only on the local runtime (--runtime local), not on kubernetes: nginx, HAProxy and redis-server run on the runner's loopback", false},
		{"header affinity", "kubernetes", "server: {replicas: 3}\nbalancer: {kind: service, balance: header Mcp-Session-Id}\nclient:",
			"balancer.balance: a service balances roundrobin or source only", false},
		{"an nginx setting", "kubernetes", "server: {replicas: 3}\nbalancer: {kind: service, proxy_read_timeout: 10m}\nclient:",
			"balancer.proxy_read_timeout: is not a setting of a service: kube-proxy forwards connections", false},
		{"a crash of the balancer", "kubernetes", service,
			":10:42: faults[0].params.role: a balancer of kind service is no process to crash or pause", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := strings.Replace(validExperiment, "client:", tt.with, 1)
			if tt.crash {
				body = strings.Replace(body, "faults:\n", "faults:\n  - {kind: crash, at: 1s, params: {role: balancer, down: 1s}}\n", 1)
			}
			path := writeExperiment(t, body)
			code, _, stderr := chaosrun(t, "run", "--runtime", tt.runtime, "--out", t.TempDir(), path)
			assert.Equal(t, exitInvalid, code, stderr)
			assert.Contains(t, stderr, tt.want)
		})
	}
}

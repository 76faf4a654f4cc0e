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

// TestKubeBalancesReplicasByAService runs each experiment of
// experiments/kubernetes on the cluster: three server replicas behind a
// Service, one of them crashed. Each meets its expectation, the crash
// broke calls in flight (the expectations ask for it), and nothing of the
// run is left in the cluster. Which replica kube-proxy sends a call to is
// chance, so now and then no call is on the crashed replica: that run is
// inconclusive (fault_hit), never a pass, and the experiment runs once
// more; any other outcome counts as it is.
func TestKubeBalancesReplicasByAService(t *testing.T) {
	f := needKube(t)
	files, err := filepath.Glob("../../experiments/kubernetes/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			code, dir, v := kubeServiceRun(t, f, file)
			if missed(v) {
				t.Logf("the crash hit no call (kube-proxy sent none to the crashed replica): running it once more")
				code, dir, v = kubeServiceRun(t, f, file)
			}
			assert.Equal(t, exitMet, code)
			run := runOf(t, dir)
			require.Len(t, run.Results, 1)
			x := run.Results[0]
			assert.True(t, x.Met, "%s: %v %s", x.Name, x.Reasons, x.Error)
			assert.Positive(t, v.Figures.CallsUnknown+v.Figures.BlindRetries, "%s: the crash of replica 2 broke no call", x.Name)
			t.Logf("%s: %s %v %+v", x.Name, v.Verdict, v.Violations, v.Figures)
			assert.Empty(t, namespacesOf(t, f, run.ID))
		})
	}
}

// kubeServiceRun runs one experiment on the cluster and returns the exit
// code, the run's folder and the experiment's verdict.
func kubeServiceRun(t *testing.T, f kubeFixture, file string) (int, string, check.Verdict) {
	t.Helper()
	code, dir, _ := kubeRun(context.Background(), t, f, t.TempDir(), file)
	run := runOf(t, dir)
	require.Len(t, run.Results, 1)
	v, err := check.LoadVerdict(filepath.Join(dir, run.Results[0].Name, check.VerdictFile))
	require.NoError(t, err)
	return code, dir, v
}

// missed reports whether a verdict is inconclusive because the fault hit
// no call in flight.
func missed(v check.Verdict) bool {
	hit, ok := v.Result(check.FaultHit)
	return v.Verdict == check.Inconclusive && ok && !hit.Held()
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

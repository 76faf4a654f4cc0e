package harness_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/redisserver"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
)

// needBalancers skips the test when nginx, HAProxy or redis-server is not
// installed, unless CHAOSRUN_REQUIRE_BALANCERS=1 (CI) makes that a failure.
func needBalancers(t *testing.T) {
	t.Helper()
	var missing []error
	for _, kind := range balancer.Kinds {
		if _, err := balancer.Binary(kind); err != nil {
			missing = append(missing, err)
		}
	}
	if _, err := redisserver.Binary(); err != nil {
		missing = append(missing, err)
	}
	if err := errors.Join(missing...); err != nil {
		if os.Getenv("CHAOSRUN_REQUIRE_BALANCERS") == "1" {
			t.Fatalf("CHAOSRUN_REQUIRE_BALANCERS=1: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
}

// comparable is a verdict without what differs between two faithful runs
// of one incident: the times, and the schedule (a toxic's window counts in
// it, a balancer's standing timeout does not).
func comparable(v *check.Verdict) (string, []string, check.Figures) {
	f := v.Figures
	f.WallMS, f.ScheduledMS, f.WorstReconnectMS = 0, 0, 0
	return v.Verdict, v.Violations, f
}

// TestRealBalancersReachTheToxicsVerdict runs each incident with the
// idle_timeout toxic, behind a real nginx and behind a real HAProxy with
// the same 60 s (scaled) timeout (and the double charge on three nginx
// replicas too). The imitation is faithful when all reach the same
// verdict, violations and figures.
// runMet runs the experiment files side by side and requires each to meet
// its expectation; the tests then check what the expectations cannot say.
func runMet(t *testing.T, files ...string) (*results.Run, []*spec.Plan) {
	t.Helper()
	var plans []*spec.Plan
	for _, f := range files {
		x, err := spec.Load(f)
		require.NoError(t, err)
		plans = append(plans, x.Plan(spec.Overrides{}))
	}
	run, err := harness.Execute(context.Background(), harness.Options{Out: t.TempDir(), Parallel: 2}, plans)
	require.NoError(t, err)
	for _, res := range run.Results {
		require.Empty(t, res.Error, res.Name)
		assert.True(t, res.Met, "%s: %v", res.Name, res.Reasons)
	}
	return run, plans
}

func TestRealBalancersReachTheToxicsVerdict(t *testing.T) {
	needBalancers(t)
	tests := []struct {
		name  string
		files []string // the toxic version first
	}{
		{"double charge", []string{"../experiments/double-charge-lb-idle.yaml",
			"../experiments/balancer/double-charge-nginx.yaml", "../experiments/balancer/double-charge-haproxy.yaml",
			"../experiments/balancer/replicas-double-charge-naive.yaml"}},
		{"keepalive defeats the timeout", []string{"../experiments/keepalive-defeats-idle-timeout.yaml",
			"../experiments/balancer/keepalive-defeats-nginx.yaml", "../experiments/balancer/keepalive-defeats-haproxy.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			run, plans := runMet(t, tt.files...)
			want, wantViolations, wantFigures := comparable(run.Results[0].Verdict)
			for i, res := range run.Results[1:] {
				got, violations, figures := comparable(res.Verdict)
				assert.Equal(t, want, got, res.Name)
				assert.Equal(t, wantViolations, violations, res.Name)
				assert.Equal(t, wantFigures, figures, res.Name)
				conf := balancer.Config{Kind: plans[i+1].Balancer.Kind}.FileName()
				assert.FileExists(t, filepath.Join(res.Dir, conf), "the rendered configuration is kept with the results")
			}
		})
	}
}

// TestReplicaCrashSendsTheResumeElsewhere runs the replica experiments: with
// replica 3 down, nginx sends the resumable client's resume to another
// replica, which answers 404, and the naive client's retry lands there too.
func TestReplicaCrashSendsTheResumeElsewhere(t *testing.T) {
	needBalancers(t)
	run, _ := runMet(t, "../experiments/balancer/replica-crash-naive.yaml", "../experiments/balancer/replica-crash-resumable.yaml")
	for _, res := range run.Results {
		for _, name := range []string{"server-1", "server-2", "server-3"} {
			assert.FileExists(t, filepath.Join(res.Dir, "logs", name+".log"), "each replica is an agent of its own")
		}
		access, err := os.ReadFile(filepath.Join(res.Dir, "state", "balancer", "access.log"))
		require.NoError(t, err)
		assert.Regexp(t, `upstream=\S+, \S+`, string(access), "%s: a request was passed to a second replica after the first refused", res.Name)
	}
	resumable := run.Results[1].Verdict
	assert.EqualValues(t, 1, resumable.Figures.CallsUnknown, "the 404 from the other replica is surfaced as an unknown outcome")
}

// TestSharedStoreHonoursTheResumeOnAnotherReplica runs the replica
// experiments with the event store in a real Redis: a resume that lands on
// another replica than the one that ran the call is served from the shared
// journal, with no 404 and no new session, even after redis-server itself
// was killed and started again.
func TestSharedStoreHonoursTheResumeOnAnotherReplica(t *testing.T) {
	needBalancers(t)
	run, _ := runMet(t, "../experiments/balancer/replicas-redis-resume.yaml", "../experiments/balancer/replica-crash-redis.yaml",
		"../experiments/balancer/redis-crash-journal-survives.yaml")
	for _, res := range run.Results {
		f := res.Verdict.Figures
		assert.EqualValues(t, 1, f.Sessions, "%s: the session survives the move to another replica", res.Name)
		assert.GreaterOrEqual(t, f.Resumes, int64(1), res.Name)
		aof, _ := filepath.Glob(filepath.Join(res.Dir, "state", "redis", "appendonly*"))
		assert.NotEmpty(t, aof, "%s: redis keeps its data in the experiment's state folder", res.Name)
	}
	assert.EqualValues(t, 1, run.Results[0].Verdict.Figures.CallsOK, "the result written on one replica is read on another")
	assert.EqualValues(t, 1, run.Results[1].Verdict.Figures.CallsUnknown, "the restarted replica resolves its call through the journal")
}

// TestHAProxyHoldsToTheReplicaItHashesTo runs the replica crash behind
// HAProxy: until its health check marks the replica down, balance source
// keeps choosing it, so the resume meets 503 (connection refused) and then
// the 404 of the restarted, empty replica 3, and never another replica.
func TestHAProxyHoldsToTheReplicaItHashesTo(t *testing.T) {
	needBalancers(t)
	run, _ := runMet(t, "../experiments/balancer/replica-crash-haproxy.yaml")
	res := run.Results[0]
	log, err := os.ReadFile(filepath.Join(res.Dir, "state", "balancer", "haproxy.log"))
	require.NoError(t, err)
	assert.Regexp(t, `replicas/replica3 \S+ 503 .*"GET /mcp`, string(log), "the resume is refused while replica 3 is down")
	assert.Regexp(t, `replicas/replica3 \S+ 404 .*"GET /mcp`, string(log), "and answered 404 once it is back")
	assert.NotRegexp(t, `replicas/replica[12] .*"GET /mcp`, string(log), "no GET went elsewhere")
}

// TestBalancerCrash kills nginx itself mid-charge: the resumable client
// resumes through the restarted balancer, the naive one charges twice.
func TestBalancerCrash(t *testing.T) {
	needBalancers(t)
	run, _ := runMet(t, "../experiments/balancer/balancer-crash-resumable.yaml", "../experiments/balancer/balancer-crash-naive.yaml")
	assert.EqualValues(t, 1, run.Results[0].Verdict.Figures.Resumes)
	assert.EqualValues(t, 1, run.Results[1].Verdict.Figures.Duplicates)
}

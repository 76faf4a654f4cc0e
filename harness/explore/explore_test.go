package explore

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	roles.RunIfAgent()
	os.Exit(m.Run())
}

var calls = []lab.Call{{Tool: "place_order", Duration: "20s"}, {Tool: "export_rows", Duration: "10s"}}

func TestTheSameSeedDrawsTheSameSchedules(t *testing.T) {
	b := Bounds{}.withDefaults("reference")
	for i := range 20 {
		assert.Equal(t, draw(7, i, b, calls, time.Minute), draw(7, i, b, calls, time.Minute), "schedule %d", i)
	}
	assert.NotEqual(t, draw(7, 0, b, calls, time.Minute), draw(8, 0, b, calls, time.Minute), "another seed, other schedules")
	for i := range 200 {
		s := draw(3, i, b, calls, time.Minute)
		require.NotEmpty(t, s)
		assert.LessOrEqual(t, len(s), b.MaxFaults)
		for _, f := range s {
			assert.Contains(t, b.Kinds, f.Kind)
			for _, p := range durationParams {
				if d, ok := f.Params[p].(time.Duration); ok {
					assert.LessOrEqual(t, d, b.MaxWindow, "%s", f)
				}
			}
		}
	}
}

func TestShrinkCandidatesComeInAFixedOrder(t *testing.T) {
	s := Schedule{
		{Kind: "partition", At: 8 * time.Second, Params: map[string]any{"for": 40 * time.Second, "mode": "refuse"}},
		{Kind: "reset", OnCall: "place_order", At: 3 * time.Second, Params: map[string]any{}},
	}
	c := s.candidates()
	require.Len(t, c, 5, "two removals, one window halved, two faults earlier")
	assert.Equal(t, Schedule{s[1]}, c[0], "fewer faults first")
	assert.Equal(t, Schedule{s[0]}, c[1])
	assert.Equal(t, 20*time.Second, c[2][0].Params["for"], "then shorter windows")
	assert.Equal(t, 40*time.Second, s[0].Params["for"], "a candidate never changes the schedule it came from")
	assert.Equal(t, 4*time.Second, c[3][0].At, "then earlier times")
	assert.Equal(t, c, s.candidates(), "the same candidates every time")
	one := Schedule{{Kind: "reset", OnCall: "place_order", At: time.Second, Params: map[string]any{}}}
	require.Len(t, one.candidates(), 1)
	assert.Equal(t, time.Duration(0), one.candidates()[0][0].At, "every candidate differs from the schedule: 1 s becomes 0, not 1 s again")
	assert.Empty(t, Schedule{{Kind: "reset", Params: map[string]any{}}}.candidates(), "nothing left to shrink")
}

func TestBaseWithAnExploreBlock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "base.yaml")
	require.NoError(t, os.WriteFile(path, []byte(`name: base
description: A charge.
time_scale: 0.05
client: {target: naive}
workload:
  calls: [{tool: charge, args: {amount_cents: 1}, duration: 20s}]
faults: [{kind: reset, at: 1s}]
expect: {verdict: pass}
explore: {kinds: [reset, partition], max_faults: 2, max_window: 1m}
`), 0o644))
	x, b, err := LoadBase(path)
	require.NoError(t, err)
	assert.Equal(t, Bounds{Kinds: []string{"reset", "partition"}, MaxFaults: 2, MaxWindow: time.Minute}, b)
	assert.Empty(t, x.Faults, "explore draws the faults")
	require.NoError(t, os.WriteFile(path, []byte("name: base\ndescription: x\nworkload: {calls: [{tool: charge, args: {amount_cents: 1}, duration: 1s}]}\nexpect: {verdict: pass}\nexplore: {kinds: [nope]}\n"), 0o644))
	_, _, err = LoadBase(path)
	require.ErrorIs(t, err, ErrInput)
	assert.Contains(t, err.Error(), `unknown kind "nope"`)

	missing := filepath.Join(dir, "no-such-server")
	require.NoError(t, os.WriteFile(path, fmt.Appendf(nil, "name: base\ndescription: x\nserver: {target: command, command: [%s, --addr, \"{addr}\"]}\nworkload: {calls: [{tool: charge, args: {amount_cents: 1}, duration: 1s}]}\nexpect: {verdict: pass}\n", missing), 0o644))
	_, _, err = LoadBase(path)
	require.ErrorIs(t, err, ErrInput, "a program that is not there fails every run alike: invalid input, not a finding")
	assert.Contains(t, err.Error(), "server.command: "+missing+": not found")
}

// The naive client against the go-sdk shop: the double charge is found
// and shrunk to one fault, and the minimal file reproduces it.
func TestExploreFindsAndShrinksTheDoubleCharge(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real experiments; skipped with -short")
	}
	dir := t.TempDir()
	shop := buildShop(t, dir)
	base := filepath.Join(dir, "naive-shop.yaml")
	require.NoError(t, os.WriteFile(base, []byte(`name: naive-shop
description: The naive client places an order at the go-sdk shop.
seed: 1
time_scale: 0.05
server: {target: command, command: [`+shop+`, --addr, "{addr}", --work, 1s]}
client: {target: naive, backoff: {initial: 1s, max: 30s, retries: 1}}
workload:
  calls: [{tool: place_order, args: {order_id: "order-{{call}}", amount_cents: 4999}, key: order_id, duration: 20s}]
expect: {verdict: pass}
explore: {kinds: [reset, idle_timeout, partition], max_faults: 2, max_window: 30s}
`), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// Eight schedules: whether a reset 0.35 s into the run cuts the call
	// or the client's start depends on how fast the client starts, and on
	// a machine loaded by a whole test run the second schedule (the first
	// to find it on an idle one) found nothing in one run of four.
	sum, err := Run(ctx, Options{Base: base, Runs: 8, Repeats: 1, ShrinkRuns: 12, Reproduce: 3, Parallel: 2, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	var charge *Finding
	for i, f := range sum.Findings {
		if charge == nil && slices.Contains(f.Violations, "no_duplicate_side_effects") {
			charge = &sum.Findings[i]
		}
	}
	require.NotNil(t, charge, "%+v", sum.Findings)
	assert.Len(t, charge.Minimal, 1, "shrunk to one fault: %v", charge.Minimal)
	assert.Equal(t, 3, charge.Reproduced, "the minimal file reproduces its violation every time")
	x, err := spec.Load(charge.File)
	require.NoError(t, err, "the minimal file is a valid experiment")
	assert.Equal(t, "fail", x.Expect.Verdict)
	assert.Contains(t, x.Expect.Violations, "no_duplicate_side_effects")
	again, err := results.Rejudge(filepath.Join(sum.Dir, lab.ExperimentsDir))
	require.NoError(t, err)
	for _, r := range again.Results {
		assert.True(t, r.Met || r.Error != "", "%s: %v", r.Name, r.Reasons)
	}
	assert.FileExists(t, filepath.Join(sum.Dir, charge.Timeline))
}

func TestHarnessErrorsAreKeptApartByKind(t *testing.T) {
	a := errorKind("client exited with code 4 (see /tmp/a/explore-088/logs/client.log)")
	b := errorKind("client exited with code 4 (see /tmp/b/explore-091/logs/client.log)")
	c := errorKind("client did not finish within the deadline of 2m3s: context deadline exceeded")
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, c)
	assert.Equal(t, "client did not finish within the deadline of N", c)
}

// buildShop builds the black-box go-sdk shop into dir and returns its path.
func buildShop(t *testing.T, dir string) string {
	t.Helper()
	shop := filepath.Join(dir, "shop-gosdk")
	cmd := exec.Command("go", "build", "-o", shop, "../../examples/blackbox/shop-gosdk")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return shop
}

package explore

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// samplesOf makes n samples a second apart of one incarnation, the i-th
// holding rss(i) KiB and fds(i) descriptors.
func samplesOf(n, incarnation int, rss func(i int) int64, fds func(i int) int) []agent.Sample {
	var out []agent.Sample
	for i := range n {
		out = append(out, agent.Sample{Agent: "server", TUS: int64(i) * 1e6, Incarnation: incarnation, RSSKiB: rss(i), FDs: fds(i), Procs: 1})
	}
	return out
}

func flat(int) int64 { return 40 << 10 }

func fdsFlat(int) int { return 12 }

func TestSoakFindsLeaksFromSamples(t *testing.T) {
	for _, tc := range []struct {
		name    string
		samples []agent.Sample
		want    []string
	}{
		{"flat", samplesOf(60, 1, flat, fdsFlat), nil},
		{"noise and a warm-up step", samplesOf(60, 1, func(i int) int64 {
			if i < 5 {
				return 20 << 10
			}
			return 40<<10 + int64(i%3)*512
		}, fdsFlat), nil},
		{"one step up, then flat", samplesOf(60, 1, func(i int) int64 {
			if i < 45 {
				return 40 << 10
			}
			return 90 << 10
		}, fdsFlat), nil},
		{"growing all along", samplesOf(60, 1, func(i int) int64 { return 40<<10 + int64(i)<<10 }, fdsFlat), []string{LeakMemory}},
		{"descriptors left open", samplesOf(60, 1, flat, func(i int) int {
			if i == 0 {
				return 12
			}
			return 12 + i
		}), []string{LeakDescriptors}},
		{"a restart starts afresh", append(samplesOf(20, 1, func(i int) int64 { return 40<<10 + int64(i)<<11 }, fdsFlat),
			samplesOf(40, 2, flat, fdsFlat)...), nil},
		{"too few samples to tell growth", samplesOf(6, 1, func(i int) int64 { return 40<<10 + int64(i)<<14 }, fdsFlat), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, findings := analyse(tc.samples, nil, nil)
			var kinds []string
			for _, f := range findings {
				kinds = append(kinds, f.Kind)
			}
			assert.Equal(t, tc.want, kinds, "%+v", findings)
		})
	}
}

func TestSoakSeriesCountsConnectionsAndFaults(t *testing.T) {
	samples := samplesOf(50, 1, flat, fdsFlat)
	recs := []wire.Record{
		{TUS: 1e6, Edge: wire.EdgeServer, Conn: 1, Kind: wire.KindOpen},
		{TUS: 1e6, Edge: wire.EdgeClient, Conn: 1, Kind: wire.KindOpen},
		{TUS: 2e6, Edge: wire.EdgeServer, Conn: 2, Kind: wire.KindOpen},
		{TUS: 30e6, Edge: wire.EdgeServer, Conn: 1, Kind: wire.KindClose},
	}
	entries := []faults.Entry{{Kind: "partition", StartUS: 10e6, EndUS: 20e6}}
	points, _ := analyse(samples, recs, entries)
	require.LessOrEqual(t, len(points), SoakPoints+1)
	assert.Equal(t, int64(49e6), points[len(points)-1].TUS, "the last sample is always a point")
	for _, p := range points {
		want := 0
		switch {
		case p.TUS >= 30e6:
			want = 1
		case p.TUS >= 2e6:
			want = 2
		case p.TUS >= 1e6:
			want = 1
		}
		assert.Equal(t, want, p.Conns, "t=%d", p.TUS)
		if p.TUS >= 10e6 && p.TUS <= 20e6 {
			assert.Equal(t, []string{"partition"}, p.Faults)
		} else {
			assert.Empty(t, p.Faults)
		}
	}
}

func TestSoakRepeatsTheWorkloadAsNewOperations(t *testing.T) {
	base := &lab.Experiment{TimeScale: 0.05, Workload: lab.Workload{Calls: []lab.Call{
		{Tool: "charge", Args: map[string]any{"order_id": "pay-1", "amount_cents": 1}, Duration: "20s"},
		{Tool: "place_order", Args: map[string]any{"ref": "r-1"}, Key: "ref", Duration: "20s"},
	}}}
	x, span := soakWorkload(base, 10*time.Second) // 10 s of wall is 200 s at 0.05: five rounds of 40 s
	require.Len(t, x.Workload.Calls, 10)
	assert.Equal(t, 200*time.Second, span)
	seen := map[string]bool{}
	for _, c := range x.Workload.Calls {
		id := c.Args["order_id"]
		if id == nil {
			id = c.Args["ref"]
		}
		assert.False(t, seen[id.(string)], "repeat of %v is an operation of its own", id)
		seen[id.(string)] = true
	}
	assert.Equal(t, "pay-1", base.Workload.Calls[0].Args["order_id"], "the base is left as it was")
}

func TestSoakOfTheReferenceServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 20-second soak")
	}
	dir := t.TempDir()
	base := filepath.Join(dir, "base.yaml")
	require.NoError(t, os.WriteFile(base, []byte(`name: chatty-soak
description: The resumable client reads a chatty tool of the reference server.
seed: 3
time_scale: 0.05
client: {target: resumable, backoff: {initial: 1s, max: 5s, retries: 20}}
workload:
  calls:
    - {tool: chatty, args: {events: 40}, duration: 40s}
    - {tool: charge, args: {order_id: "pay-{{call}}", amount_cents: 100}, duration: 20s}
expect: {verdict: pass}
explore: {kinds: [reset, latency], max_window: 20s}
`), 0o644))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := Soak(ctx, SoakOptions{Base: base, For: 20 * time.Second, Out: filepath.Join(dir, "out")})
	require.NoError(t, err)
	assert.Empty(t, sum.Error)
	assert.True(t, sum.Sampled, "the local runtime samples the server")
	assert.GreaterOrEqual(t, sum.Calls, 12, "20 s of wall at 0.05 is 400 s: about seven rounds of 60 s")
	require.NotEmpty(t, sum.Series)
	for _, p := range sum.Series {
		assert.Positive(t, p.RSSKiB)
		assert.Positive(t, p.FDs)
	}
	assert.Greater(t, sum.Series[len(sum.Series)-1].TUS, int64(15e6), "the series spans the soak")
	for _, f := range sum.Findings {
		assert.NotContains(t, []string{LeakMemory, LeakDescriptors}, f.Kind, "the reference server leaks nothing in 20 s: %s", f.Text)
	}
	assert.FileExists(t, filepath.Join(sum.Dir, SoakMarkdownFile))
	assert.FileExists(t, filepath.Join(sum.Dir, sum.Experiment, "samples.jsonl"))
}

// A shop that keeps every charged order's receipt in memory, never
// evicted: the soak finds its memory growing, and the same shop without
// the cache leaks nothing.
func TestSoakFindsAnUnboundedCache(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two 20-second soaks")
	}
	dir := t.TempDir()
	shop := buildShop(t, dir)
	for _, tc := range []struct {
		receiptKiB int
		leak       bool
	}{{4096, true}, {0, false}} {
		t.Run(fmt.Sprintf("receipts of %d KiB", tc.receiptKiB), func(t *testing.T) {
			base := filepath.Join(dir, fmt.Sprintf("shop-%d.yaml", tc.receiptKiB))
			require.NoError(t, os.WriteFile(base, fmt.Appendf(nil, `name: shop-soak
description: The resumable client places orders at the go-sdk shop.
seed: 5
time_scale: 0.05
server: {target: command, command: [%s, --addr, "{addr}", --work, 500ms, --receipt-kib, "%d"]}
client: {target: resumable, backoff: {initial: 1s, max: 5s, retries: 20}}
workload:
  calls: [{tool: place_order, args: {order_id: "order-{{call}}", amount_cents: 100}, key: order_id, duration: 10s}]
expect: {verdict: pass}
explore: {kinds: [latency], max_window: 10s}
`, shop, tc.receiptKiB), 0o644))
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			sum, err := Soak(ctx, SoakOptions{Base: base, For: 20 * time.Second, Out: filepath.Join(dir, fmt.Sprintf("out-%d", tc.receiptKiB))})
			require.NoError(t, err)
			require.Empty(t, sum.Error)
			var kinds []string
			for _, f := range sum.Findings {
				kinds = append(kinds, f.Kind)
			}
			assert.Equal(t, tc.leak, slices.Contains(kinds, LeakMemory), "%s", sum.Markdown())
			assert.NotContains(t, kinds, LeakDescriptors)
			t.Log(sum.Markdown())
		})
	}
}

package harness_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
)

func TestUsageOfEveryAgent(t *testing.T) {
	x, err := spec.Load("../experiments/double-charge-lb-idle-resumable.yaml")
	require.NoError(t, err)
	run, err := harness.Execute(context.Background(), harness.Options{Out: t.TempDir()}, []*spec.Plan{x.Plan(spec.Overrides{})})
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(run.Results[0].Dir, harness.UsageFile))
	require.NoError(t, err)
	var usage []agent.Usage
	require.NoError(t, json.Unmarshal(raw, &usage))
	var agents []string
	for _, u := range usage {
		agents = append(agents, u.Agent)
		assert.Equal(t, 1, u.Incarnation, "%s started once", u.Agent)
		assert.Positive(t, u.PeakRSSKiB, "%s's peak memory is measured", u.Agent)
	}
	assert.Equal(t, []string{"ledger", "server", "proxy", "client"}, agents)

	f, err := os.Open(filepath.Join(run.Results[0].Dir, harness.SamplesFile))
	require.NoError(t, err)
	defer f.Close()
	samples, err := harness.ReadSamples(f)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(samples), 2, "the server is sampled as it starts, every second, and as the workload ends")
	for i, s := range samples {
		assert.Equal(t, "server", s.Agent)
		assert.Positive(t, s.RSSKiB)
		assert.Positive(t, s.FDs)
		if i > 0 {
			assert.Greater(t, s.TUS, samples[i-1].TUS, "samples are in the order taken, on the run's clock")
		}
	}
}

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
}

package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/spec"
)

// TestExpandGivesEveryRepetitionAFolderAndTheSeed: repetitions run in
// folders of their own, sorted as numbered, on the plan's seed unless the
// seed varies.
func TestExpandGivesEveryRepetitionAFolderAndTheSeed(t *testing.T) {
	x, err := spec.Parse("saved.yaml", []byte(`name: saved
description: An experiment repeated.
workload:
  calls: [{tool: charge, args: {amount_cents: 5}, duration: 1s}]
expect:
  verdict: fail
`))
	require.NoError(t, err)
	seed := int64(40)
	plan := x.Plan(spec.Overrides{Seed: &seed})
	tests := []struct {
		name     string
		repeat   int
		vary     bool
		folders  []string
		seeds    []int64
		repeated []int
	}{
		{"once", 1, false, []string{"saved"}, []int64{40}, []int{0}},
		{"three times", 3, false, []string{"saved.r1", "saved.r2", "saved.r3"}, []int64{40, 40, 40}, []int{1, 2, 3}},
		{"three times, the seed varied", 3, true, []string{"saved.r1", "saved.r2", "saved.r3"}, []int64{40, 41, 42}, []int{1, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var folders []string
			var seeds []int64
			var reps []int
			for _, j := range expand([]*spec.Plan{plan}, tc.repeat, tc.vary) {
				folders, seeds, reps = append(folders, j.folder()), append(seeds, j.plan.Seed), append(reps, j.repetition)
			}
			assert.Equal(t, tc.folders, folders)
			assert.Equal(t, tc.seeds, seeds)
			assert.Equal(t, tc.repeated, reps)
		})
	}
	jobs := expand([]*spec.Plan{plan}, 10, false)
	assert.Equal(t, "saved.r01", jobs[0].folder(), "zero-padded, so folders sort as numbered")
	assert.Equal(t, "saved.r10", jobs[9].folder())
}

package matrix

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardsOfCellsAgreeWithShardsOfPlans: the cells a shard of the
// matrix holds are those whose plans the same shard of the plans keeps, so
// a shard's results tabulate; the shards' tables join into the whole.
func TestShardsOfCellsAgreeWithShardsOfPlans(t *testing.T) {
	m, err := Load(write(t, small))
	require.NoError(t, err)
	var tables []*Table
	seen := map[string]bool{}
	for _, s := range []results.Shard{{Index: 1, Count: 3}, {Index: 2, Count: 3}, {Index: 3, Count: 3}} {
		t.Run(s.String(), func(t *testing.T) {
			part := m.Shard(s)
			plans := s.Select(m.Plans(spec.Overrides{}))
			require.Len(t, part.Cells, len(plans))
			run := &results.Run{ID: "shard", Dir: "shard", Runtime: "local"}
			for i, c := range part.Cells {
				assert.Equal(t, c.Experiment.Name, plans[i].Experiment.Name)
				assert.False(t, seen[c.Experiment.Name], "one shard per cell")
				seen[c.Experiment.Name] = true
				run.Results = append(run.Results, &results.ExperimentResult{Name: c.Experiment.Name, Dir: filepath.Join("shard", c.Experiment.Name),
					Expected: plans[i].Expect.Verdict, Met: plans[i].Expect.Verdict == check.Pass, Verdict: &check.Verdict{Verdict: check.Pass, Violations: []string{}}})
			}
			table, err := Tabulate(part, run, nil)
			require.NoError(t, err)
			assert.Equal(t, s.String(), table.Shard)
			var b bytes.Buffer
			require.NoError(t, table.WriteMarkdown(&b))
			assert.Contains(t, b.String(), "Shard "+s.String()+" of the cells")
			tables = append(tables, table)
		})
	}
	assert.Len(t, seen, len(m.Cells), "the shards cover the matrix")
	assert.Len(t, m.Shard(results.Shard{}).Cells, len(m.Cells))

	whole, err := Join(tables, &results.Run{ID: "merged", Dir: "merged", Runtime: "local"})
	require.NoError(t, err)
	assert.Len(t, whole.Cells, len(m.Cells))
	assert.Empty(t, whole.Shard)
	for _, c := range whole.Cells {
		assert.Equal(t, "merged", filepath.Dir(c.Dir), "cells point into the merged run")
	}
	var b bytes.Buffer
	require.NoError(t, whole.WriteMarkdown(&b))
	assert.Contains(t, b.String(), "| resumable | pass | pass |")
	assert.Contains(t, b.String(), "| naive | ✗ pass (expected fail) | ✗ pass (expected fail) |")

	other := *tables[0]
	other.Name = "other"
	_, err = Join([]*Table{tables[0], &other}, &results.Run{})
	assert.ErrorContains(t, err, "two matrices")
}

package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/harness/spec"
)

// Shard is one of Count shares of a set of experiments, numbered from 1.
// The zero Shard is the whole set.
//
// The share is deterministic: the experiments are sorted by name and shard
// I of N takes those at positions I-1, I-1+N, I-1+2N, ... (round robin).
// Every experiment falls in exactly one shard whatever the order they were
// given in, and the shards' sizes differ by at most one. Adding or removing
// an experiment may move others to another shard: a shard is a share of
// one set, not a fixed home for an experiment.
type Shard struct {
	Index int // 1..Count
	Count int
}

// ParseShard reads "I/N", with 1 <= I <= N.
func ParseShard(s string) (Shard, error) {
	i, n, ok := strings.Cut(s, "/")
	index, err1 := strconv.Atoi(strings.TrimSpace(i))
	count, err2 := strconv.Atoi(strings.TrimSpace(n))
	if !ok || err1 != nil || err2 != nil {
		return Shard{}, fmt.Errorf("shard %q: write I/N, as in 2/4 (the second of four shares)", s)
	}
	if count < 1 {
		return Shard{}, fmt.Errorf("shard %q: N, the number of shards, must be at least 1", s)
	}
	if index < 1 || index > count {
		return Shard{}, fmt.Errorf("shard %q: I must be from 1 to N, as in 1/%d to %d/%d", s, count, count, count)
	}
	return Shard{Index: index, Count: count}, nil
}

// Whole reports whether s is the whole set (no sharding).
func (s Shard) Whole() bool { return s.Count <= 1 }

// String is "I/N", or "" for the whole set.
func (s Shard) String() string {
	if s.Whole() {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.Index, s.Count)
}

// Pick returns the positions in names of the shard's share, in the order
// names has them.
func (s Shard) Pick(names []string) []int {
	order := make([]int, len(names))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
	var picked []int
	for rank, i := range order {
		if s.Whole() || rank%s.Count == s.Index-1 {
			picked = append(picked, i)
		}
	}
	slices.Sort(picked)
	return picked
}

// Select returns the plans of the shard's share, in the order given.
func (s Shard) Select(plans []*spec.Plan) []*spec.Plan {
	names := make([]string, len(plans))
	for i, p := range plans {
		names[i] = p.Experiment.Name
	}
	var out []*spec.Plan
	for _, i := range s.Pick(names) {
		out = append(out, plans[i])
	}
	return out
}

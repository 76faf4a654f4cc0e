package results

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseShard(t *testing.T) {
	tests := []struct {
		in      string
		want    Shard
		wantErr string
	}{
		{in: "1/1", want: Shard{Index: 1, Count: 1}},
		{in: "2/4", want: Shard{Index: 2, Count: 4}},
		{in: "4/4", want: Shard{Index: 4, Count: 4}},
		{in: "0/4", wantErr: "I must be from 1 to N, as in 1/4 to 4/4"},
		{in: "5/4", wantErr: "I must be from 1 to N"},
		{in: "1/0", wantErr: "N, the number of shards, must be at least 1"},
		{in: "-1/2", wantErr: "I must be from 1 to N"},
		{in: "2", wantErr: "write I/N, as in 2/4"},
		{in: "a/b", wantErr: "write I/N"},
		{in: "1/2/3", wantErr: "write I/N"},
		{in: "", wantErr: "write I/N"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseShard(tc.in)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			if got.Whole() {
				assert.Empty(t, got.String(), "one shard is the whole set")
			} else {
				assert.Equal(t, tc.in, got.String())
			}
		})
	}
}

// TestShardsCoverEveryExperimentOnceWhateverTheOrder: for sets of every
// size up to 13 and shard counts up to 5, the shards are disjoint, cover
// the set, differ in size by at most one, and hold the same experiments
// however the set is ordered.
func TestShardsCoverEveryExperimentOnceWhateverTheOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 13; n++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("exp-%c", 'a'+rng.IntN(26)) + fmt.Sprint(i)
		}
		for count := 1; count <= 5; count++ {
			t.Run(fmt.Sprintf("%d experiments in %d shards", n, count), func(t *testing.T) {
				shuffled := slices.Clone(names)
				rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
				owner := map[string]int{}
				sizes := []int{}
				for index := 1; index <= count; index++ {
					s := Shard{Index: index, Count: count}
					share := pick(s, names)
					assert.ElementsMatch(t, share, pick(s, shuffled), "the share does not depend on the order")
					assert.True(t, slices.IsSortedFunc(s.Pick(names), func(a, b int) int { return a - b }), "positions in the order given")
					for _, name := range share {
						prev, taken := owner[name]
						assert.False(t, taken, "%s is in shards %d and %d", name, prev, index)
						owner[name] = index
					}
					sizes = append(sizes, len(share))
				}
				assert.Len(t, owner, n, "every experiment is in a shard")
				assert.LessOrEqual(t, slices.Max(sizes)-slices.Min(sizes), 1, "sizes %v", sizes)
			})
		}
	}
}

func pick(s Shard, names []string) []string {
	var out []string
	for _, i := range s.Pick(names) {
		out = append(out, names[i])
	}
	return out
}

// TestShardIsRoundRobinOverSortedNames pins the documented rule, which
// runs on separate machines rely on to agree.
func TestShardIsRoundRobinOverSortedNames(t *testing.T) {
	names := []string{"delta", "alpha", "echo", "charlie", "bravo"}
	tests := []struct {
		shard Shard
		want  []string
	}{
		{Shard{Index: 1, Count: 2}, []string{"alpha", "echo", "charlie"}}, // a, c, e of a b c d e
		{Shard{Index: 2, Count: 2}, []string{"delta", "bravo"}},
		{Shard{Index: 3, Count: 3}, []string{"charlie"}},
		{Shard{}, names},
	}
	for _, tc := range tests {
		t.Run(tc.shard.String(), func(t *testing.T) {
			assert.Equal(t, tc.want, pick(tc.shard, names), "in the order given")
		})
	}
}

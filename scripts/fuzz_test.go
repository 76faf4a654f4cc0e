package scripts

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// listFuzz runs scripts/fuzz in its listing mode with the given FUZZ_SHARD
// ("" for none) and returns its targets, its standard error and its exit code.
func listFuzz(t *testing.T, shard string) (targets []string, stderr string, code int) {
	t.Helper()
	cmd := exec.Command("./fuzz", "10m")
	cmd.Env = append(os.Environ(), "FUZZ_LIST=1", "FUZZ_SHARD="+shard)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else {
		require.NoError(t, err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if line != "" {
			targets = append(targets, line)
		}
	}
	return targets, errOut.String(), code
}

func TestFuzzShardsCoverEveryTargetOnce(t *testing.T) {
	all, _, code := listFuzz(t, "")
	require.Zero(t, code)
	require.NotEmpty(t, all)
	for _, n := range []int{1, 2, 3, 10, len(all) + 5} {
		t.Run(fmt.Sprintf("%d shards", n), func(t *testing.T) {
			seen := map[string]int{}
			for i := 1; i <= n; i++ {
				share, _, code := listFuzz(t, fmt.Sprintf("%d/%d", i, n))
				require.Zero(t, code)
				assert.LessOrEqual(t, len(share), (len(all)+n-1)/n, "shard %d/%d holds more than its share", i, n)
				for _, target := range share {
					seen[target]++
				}
			}
			assert.Len(t, seen, len(all), "the shards together miss a target")
			for target, times := range seen {
				assert.Equal(t, 1, times, "%s runs in %d shards", target, times)
			}
		})
	}
}

func TestFuzzRefusesABadShard(t *testing.T) {
	for _, shard := range []string{"0/3", "4/3", "1/0", "x", "1/", "-1/2"} {
		t.Run(shard, func(t *testing.T) {
			targets, stderr, code := listFuzz(t, shard)
			assert.Equal(t, 2, code)
			assert.Empty(t, targets)
			assert.Contains(t, stderr, "FUZZ_SHARD is I/N")
		})
	}
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// unmetExperiment is validExperiment renamed, expecting what it does not
// conclude.
var unmetExperiment = strings.NewReplacer(
	"name: tiny", "name: tiny-unmet",
	"verdict: fail", "verdict: pass",
	"  violations: [no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved]\n", "",
).Replace(validExperiment)

// library writes experiment files into one folder.
func library(t *testing.T, bodies ...string) string {
	t.Helper()
	dir := t.TempDir()
	for i, body := range bodies {
		require.NoError(t, os.WriteFile(filepath.Join(dir, string(rune('a'+i))+".yaml"), []byte(body), 0o644))
	}
	return dir
}

func onlyRun(t *testing.T, out string) string {
	t.Helper()
	runs, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	return filepath.Join(out, runs[0].Name())
}

// TestRepeatCountsEveryRunFromItsVerdict: --repeat runs each experiment
// that many times in folders of their own and counts the runs that met, as
// their verdicts say: a met and an unmet experiment count differently, and
// a verdict changed in one run's folder changes the count report gives.
func TestRepeatCountsEveryRunFromItsVerdict(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := chaosrun(t, "run", "-q", "--parallel", "2", "--repeat", "2", "--out", out, library(t, validExperiment, unmetExperiment))
	require.Equal(t, exitNotMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "each experiment 2 times. **2 of 4 expectations met.**")
	assert.Contains(t, stdout, "| tiny | fail | 2 of 2 | fail: no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved ×2 ([r1](tiny.r1/) [r2](tiny.r2/)) |")
	assert.Contains(t, stdout, "| tiny-unmet | pass | **0 of 2** | **fail: ")
	assert.Contains(t, stdout, "| tiny #2 | fail | fail | yes |")

	runDir := onlyRun(t, out)
	for _, f := range []string{"tiny.r1/verdict.json", "tiny.r2/verdict.json", "tiny-unmet.r1/timeline.html", "index.html"} {
		assert.FileExists(t, filepath.Join(runDir, f))
	}
	b, err := os.ReadFile(filepath.Join(runDir, "run.json"))
	require.NoError(t, err)
	assert.Contains(t, string(b), `"repeat": 2`)
	assert.Contains(t, string(b), `"tallies": [`)

	verdict := filepath.Join(runDir, "tiny.r2", "verdict.json")
	b, err = os.ReadFile(verdict)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(verdict, bytes.Replace(b, []byte(`"duplicates": 1`), []byte(`"duplicates": 0`), 1), 0o644))
	code, stdout, _ = chaosrun(t, "report", runDir)
	assert.Equal(t, exitNotMet, code)
	assert.Contains(t, stdout, "| tiny | fail | **1 of 2** |")
	assert.Contains(t, stdout, "## tiny #2: expectation not met")

	// merge keeps the exit code's rules: the unmet runs make it 1.
	code, stdout, stderr = chaosrun(t, "merge", "--out", t.TempDir(), runDir)
	assert.Equal(t, exitNotMet, code, stderr)
	assert.Contains(t, stdout, "| tiny-unmet | pass | **0 of 2** |")
}

// TestShardsRunTheirShareAndMergeIntoOne: two shards of two experiments
// run one each; merge joins them into one summary, JUnit file, run.json
// and index that hold both, and refuses an incomplete set.
func TestShardsRunTheirShareAndMergeIntoOne(t *testing.T) {
	lib := library(t, validExperiment, strings.Replace(validExperiment, "name: tiny", "name: tiny-b", 1))
	var shards []string
	for i, want := range []string{"| tiny |", "| tiny-b |"} {
		out := t.TempDir()
		code, stdout, stderr := chaosrun(t, "run", "-q", "--shard", []string{"1/2", "2/2"}[i], "--out", out, lib)
		require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stdout, want)
		assert.Contains(t, stdout, "**1 of 1 expectations met.**")
		shards = append(shards, out)
	}

	code, stdout, stderr := chaosrun(t, "run", "-q", "--shard", "3/3", "--out", t.TempDir(), lib)
	require.Equal(t, exitMet, code, stderr)
	assert.Contains(t, stderr, "shard 3/3 holds none of the 2 experiments")
	assert.Contains(t, stdout, "**0 of 0 expectations met.**")

	out, junit := t.TempDir(), filepath.Join(t.TempDir(), "junit.xml")
	code, stdout, stderr = chaosrun(t, "merge", "--out", out, "--junit", junit, shards[1], shards[0])
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "merged from 2 runs. **2 of 2 expectations met.**")
	assert.Contains(t, stdout, "| tiny | fail | fail | yes |")
	assert.Contains(t, stdout, "| tiny-b | fail | fail | yes |")
	b, err := os.ReadFile(junit)
	require.NoError(t, err)
	assert.Contains(t, string(b), `tests="2" failures="0" errors="0"`)
	runDir := onlyRun(t, out)
	for _, f := range []string{"run.json", "summary.md", "index.html", "tiny/timeline.html", "tiny-b/verdict.json"} {
		assert.FileExists(t, filepath.Join(runDir, f))
	}

	code, _, stderr = chaosrun(t, "merge", "--out", t.TempDir(), shards[0])
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "missing: 2/2")
}

// TestMatrixShardsMergeIntoOneTable: each shard of a matrix runs and
// tabulates its cells; merge joins the runs and their tables.
func TestMatrixShardsMergeIntoOneTable(t *testing.T) {
	path := writeExperiment(t, tinyMatrix)
	var shards []string
	for _, s := range []string{"1/2", "2/2"} {
		out := t.TempDir()
		code, stdout, stderr := chaosrun(t, "matrix", "-q", "--shard", s, "--out", out, path)
		require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
		assert.Contains(t, stdout, "**1 of 1 expectations met.**")
		shards = append(shards, out)
	}
	out := t.TempDir()
	code, stdout, stderr := chaosrun(t, append([]string{"merge", "--out", out}, shards...)...)
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	b, err := os.ReadFile(filepath.Join(onlyRun(t, out), "matrix.md"))
	require.NoError(t, err)
	assert.Contains(t, string(b), "| resumable | pass |")
	assert.Contains(t, string(b), "| naive | fail: duplicate, fork, orphan, blind retry or unresolved |")
	assert.NotContains(t, string(b), "Shard ")
}

package docker

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The nightly workflow runs the docker runtime in CI; actionlint checks its
// syntax, expressions, action inputs and job structure.

var nightlyWorkflow = filepath.Join("..", "..", ".github", "workflows", "nightly.yml")

func lintWorkflow(t *testing.T, name string, content []byte) ([]*actionlint.Error, string) {
	t.Helper()
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Oneline: true})
	require.NoError(t, err)
	errs, err := l.Lint(name, content, nil)
	require.NoError(t, err)
	return errs, out.String()
}

func TestNightlyWorkflowPassesActionlint(t *testing.T) {
	content, err := os.ReadFile(nightlyWorkflow)
	require.NoError(t, err)
	errs, out := lintWorkflow(t, nightlyWorkflow, content)
	require.Empty(t, errs, out)

	for _, want := range []string{
		"schedule:", "workflow_dispatch:", `CHAOSRUN_REQUIRE_DOCKER: "1"`, "go test -race ./...",
		"--runtime docker", "--junit results/junit.xml", "actions/upload-artifact@", "mikepenz/action-junit-report@",
		"pull_request:", `- "targets/**"`, `- "faults/**"`, `- "harness/**"`, `CHAOSRUN_REQUIRE_CHROMIUM: "1"`,
		"apt-get install -y -qq chromium", "bin/chaosrun matrix", "scripts/compose-demo",
		// The library and the matrix run as shards of a job matrix, merged
		// by a final job that needs them; the fuzz targets run nightly.
		"shard: [1, 2, 3, 4]", "--shard ${{ matrix.shard }}/4", "needs: experiments", "actions/download-artifact@",
		"pattern: chaosrun-shard-*", "bin/chaosrun merge --out results/library --junit results/junit.xml shards/*/library",
		"shards/*/matrix", "shards/*/blackbox", "scripts/fuzz 10m", "FUZZ_SHARD: ${{ matrix.shard }}/10",
		// The kubernetes runtime on a cluster built on the runner, its
		// tests required, the library on it, nothing left behind.
		"scripts/kube/cluster up", `CHAOSRUN_REQUIRE_KUBE: "1"`, "go test -race ./harness/kube/... ./cmd/chaosrun",
		"--runtime kubernetes", "scripts/kube/cluster down", "get namespaces -l chaosrun=1",
	} {
		assert.Contains(t, string(content), want)
	}
}

func TestActionlintCatchesBrokenWorkflows(t *testing.T) {
	for name, content := range map[string]string{
		"unknown input": "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n" +
			"      - uses: actions/checkout@v5\n        with:\n          no-such-input: 1\n",
		"bad expression": "on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n" +
			"      - run: echo ${{ github.no_such_thing( }}\n",
		"bad cron": "on:\n  schedule:\n    - cron: \"61 * * * *\"\njobs:\n  a:\n    runs-on: ubuntu-latest\n" +
			"    steps:\n      - run: true\n",
	} {
		t.Run(name, func(t *testing.T) {
			errs, _ := lintWorkflow(t, "broken.yml", []byte(content))
			assert.NotEmpty(t, errs)
		})
	}
}

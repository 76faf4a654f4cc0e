package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A workflow of a team that puts its own server under chaosrun with the
// action at the repository's root.
const actionWorkflow = `on: push
jobs:
  chaos:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v5
      - uses: ./
        with:
          server-command: python server.py --port {port}
          tool: export
          args: '{"rows": 300}'
          baseline: chaosrun-baseline.yml
      - uses: ./
        with:
          command: run
          experiments: chaos/
`

func lintAction(t *testing.T, workflow string) ([]*actionlint.Error, string) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	require.NoError(t, err)
	proj, err := actionlint.NewProject(root)
	require.NoError(t, err)
	var out bytes.Buffer
	l, err := actionlint.NewLinter(&out, &actionlint.LinterOptions{Oneline: true})
	require.NoError(t, err)
	errs, err := l.Lint(filepath.Join(root, ".github", "workflows", "uses-action.yml"), []byte(workflow), proj)
	require.NoError(t, err)
	return errs, out.String()
}

func TestActionPassesActionlint(t *testing.T) {
	errs, out := lintAction(t, actionWorkflow)
	require.Empty(t, errs, out)
	// actionlint reads the action's inputs from action.yml: one it lacks
	// is an error.
	errs, out = lintAction(t, strings.Replace(actionWorkflow, "tool: export", "no-such-input: export", 1))
	require.NotEmpty(t, errs)
	assert.Contains(t, out, "no-such-input")
}

// actionScript runs the action's step script with the test binary as
// chaosrun and the inputs as the action passes them.
func actionScript(t *testing.T, env map[string]string) (int, string, string) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	summary, output := filepath.Join(dir, "summary.md"), filepath.Join(dir, "output")
	cmd := exec.Command("bash", filepath.Join("..", "..", "scripts", "action"))
	cmd.Env = append(os.Environ(), asCLI+"=1", "CHAOSRUN="+exe, "GITHUB_STEP_SUMMARY="+summary, "GITHUB_OUTPUT="+output,
		"CHAOSRUN_OUT="+filepath.Join(dir, "results"))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stdout
	err = cmd.Run()
	code := 0
	var ee *exec.ExitError
	if err != nil {
		require.ErrorAs(t, err, &ee, stdout.String())
		code = ee.ExitCode()
	}
	s, _ := os.ReadFile(summary)
	o, _ := os.ReadFile(output)
	t.Log(stdout.String())
	return code, string(s), string(o)
}

func TestActionScriptRunsExperiments(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	code, summary, output := actionScript(t, map[string]string{"CHAOSRUN_COMMAND": "run", "CHAOSRUN_EXPERIMENTS": path, "CHAOSRUN_FLAGS": "-q"})
	assert.Equal(t, 0, code)
	assert.Contains(t, summary, "1 of 1 expectations met", "chaosrun run writes the step summary")
	require.Contains(t, output, "junit=")
	junit := strings.TrimSpace(strings.SplitN(strings.SplitN(output, "junit=", 2)[1], "\n", 2)[0])
	assert.FileExists(t, junit)
}

// The probe's step with and without a baseline: the go-sdk server does
// not cancel a call whose stream closed at 2026-07-28; the baseline that
// expects it makes the step pass.
func TestActionScriptProbesWithABaseline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real experiments; skipped with -short")
	}
	env := map[string]string{"CHAOSRUN_COMMAND": "probe", "CHAOSRUN_PROTOCOL": "2026-07-28",
		"CHAOSRUN_FLAGS": `--server={"target":"go-sdk"} --only stream-close -q`}
	code, summary, output := actionScript(t, env)
	assert.Equal(t, exitNotMet, code, "a failed check fails the step")
	assert.Contains(t, summary, "stream-close-cancels", "probe.md is the step summary")
	assert.Contains(t, output, "results=")

	baseline := filepath.Join(t.TempDir(), "baseline.yml")
	require.NoError(t, os.WriteFile(baseline, []byte("server:\n  - chaosrun-probe-server-2026-07-28:stream-close-cancels\n"), 0o644))
	env["CHAOSRUN_BASELINE"] = baseline
	code, _, _ = actionScript(t, env)
	assert.Equal(t, 0, code, "the baseline expects the failure")
}

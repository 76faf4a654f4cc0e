package main

import (
	"bytes"
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary serve as the agents of the runs it starts:
// the local runtime starts os.Executable() with "agent ROLE ...", exactly
// as it starts the chaosrun binary.
func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" { // the binary as a script runs it, and its agents: stopped by signals, as main is
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	if len(os.Args) > 1 && os.Args[1] == "agent" || len(os.Args) > 2 && os.Args[1] == "probe" && os.Args[2] == "helper" {
		os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// asCLI makes the test binary the chaosrun command, for scripts a test runs.
const asCLI = "CHAOSRUN_TEST_AS_CLI"

func chaosrun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = execute(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

const validExperiment = `name: tiny
description: A short charge cut by an idle timeout, with the naive client.
time_scale: 0.02
client: {target: naive, backoff: {initial: 1s, max: 1s, retries: 1}}
workload:
  calls: [{tool: charge, args: {amount_cents: 100}, duration: 90s}]
faults:
  - {kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}}
expect:
  verdict: fail
  violations: [no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved]
`

func writeExperiment(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func TestInvalidInputExitsThreeAndNamesFileLineField(t *testing.T) {
	path := writeExperiment(t, strings.Replace(validExperiment, "time_scale: 0.02", "time_scale: 0.02\nsede: 3", 1))
	out := t.TempDir()
	tests := [][]string{
		{"validate", path},
		{"list", path},
		{"run", "--out", out, path},
	}
	for _, args := range tests {
		t.Run(args[0], func(t *testing.T) {
			code, _, stderr := chaosrun(t, args...)
			assert.Equal(t, exitInvalid, code)
			assert.Contains(t, stderr, path+":4:1: sede: unknown field")
		})
	}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing runs, and nothing is written, when an input is invalid")
}

func TestBadFlagsAreInvalidInput(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"run", "--runtime", "cloud", path}, "--runtime"},
		{[]string{"run", "--time-scale", "-1", path}, "--time-scale"},
		{[]string{"run", "--parallel", "0", path}, "--parallel"},
		{[]string{"run", "--no-such-flag", path}, "unknown flag"},
		{[]string{"run", "--shard", "0/2", path}, `--shard: shard "0/2": I must be from 1 to N`},
		{[]string{"run", "--shard", "2", path}, `--shard: shard "2": write I/N`},
		{[]string{"run", "--repeat", "0", path}, "--repeat: must be at least 1"},
		{[]string{"run", "--vary-seed", path}, "--vary-seed"},
		{[]string{"matrix", "--shard", "3/2", path}, "--shard"},
		{[]string{"matrix", "--shard", "1/2", "--publish", "docs/m.md", path}, "--publish: a shard's table"},
		{[]string{"merge"}, "merge: give the results folders to join"},
		{[]string{"merge", filepath.Join(t.TempDir(), "missing")}, "merge"},
		{[]string{"report", filepath.Join(t.TempDir(), "missing")}, "report"},
		{[]string{"report"}, "report: give one results folder to judge again, as in: chaosrun report results/<run-id>"},
		{[]string{"explore", path}, "give --runs N, --for DURATION or --soak DURATION"},
		{[]string{"explore", "--soak", "1m", "--runs", "3", path}, "--soak runs one workload: give it without --runs and --for"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:min(2, len(tc.args))], " "), func(t *testing.T) {
			code, _, stderr := chaosrun(t, tc.args...)
			assert.Equal(t, exitInvalid, code)
			assert.Contains(t, stderr, tc.want)
		})
	}
}

func TestValidateAndListTheLibrary(t *testing.T) {
	code, out, stderr := chaosrun(t, "validate", "../../experiments")
	require.Equal(t, exitMet, code, stderr)
	assert.Contains(t, out, "ok  double-charge-lb-idle ")

	code, out, _ = chaosrun(t, "list", "../../experiments")
	require.Equal(t, exitMet, code)
	assert.Regexp(t, `silent-loss-evicted-resume\s+fail\s+resumable\s+reference\s+partition`, out)
}

// TestRunReproducesTheIncidentAndReportRejudgesIt runs a small double-charge
// experiment end to end on the local runtime, then judges the saved run
// again offline.
func TestRunReproducesTheIncidentAndReportRejudgesIt(t *testing.T) {
	path := writeExperiment(t, validExperiment)
	out := t.TempDir()
	junit := filepath.Join(t.TempDir(), "reports", "junit.xml")
	code, stdout, stderr := chaosrun(t, "run", "--out", out, "--junit", junit, path)
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "| tiny | fail | fail | yes | no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved |")
	assert.Contains(t, stderr, "fault idle_timeout #0 injected")
	assert.FileExists(t, junit)

	runs, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	runDir := filepath.Join(out, runs[0].Name())
	for _, f := range []string{"summary.md", "junit.xml", "run.json", "tiny/verdict.json", "tiny/history.jsonl",
		"tiny/ledger.jsonl", "tiny/faults.jsonl", "tiny/experiment.yaml", "tiny/logs/server.log"} {
		assert.FileExists(t, filepath.Join(runDir, f))
	}

	code, stdout, stderr = chaosrun(t, "report", runDir)
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "| tiny | fail | fail | yes |")

	// A saved verdict that no longer matches what the records say is caught.
	verdict := filepath.Join(runDir, "tiny", "verdict.json")
	b, err := os.ReadFile(verdict)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(verdict, bytes.Replace(b, []byte(`"duplicates": 1`), []byte(`"duplicates": 0`), 1), 0o644))
	code, stdout, _ = chaosrun(t, "report", runDir)
	assert.Equal(t, exitNotMet, code)
	assert.Contains(t, stdout, "differs from the saved verdict.json")
}

func TestUnmetExpectationExitsOne(t *testing.T) {
	path := writeExperiment(t, strings.NewReplacer(
		"verdict: fail", "verdict: pass",
		"  violations: [no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved]\n", "",
	).Replace(validExperiment))
	code, stdout, stderr := chaosrun(t, "run", "-q", "--out", t.TempDir(), path)
	assert.Equal(t, exitNotMet, code, stderr)
	assert.Contains(t, stdout, "verdict is fail, expected pass")
}

func TestVersion(t *testing.T) {
	code, out, _ := chaosrun(t, "version")
	require.Equal(t, exitMet, code)
	assert.Contains(t, out, "chaosrun ")
}

// TestSchemaPrintsThePublishedSchema: chaosrun schema prints what
// docs/experiment.schema.json holds, so a user can regenerate the file for
// the chaosrun they run.
func TestSchemaPrintsThePublishedSchema(t *testing.T) {
	code, out, stderr := chaosrun(t, "schema")
	require.Equal(t, exitMet, code, stderr)
	published, err := os.ReadFile("../../docs/experiment.schema.json")
	require.NoError(t, err)
	assert.Equal(t, string(published), out)
}

// children lists the live processes whose parent is this test process.
func children(t *testing.T) []string {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	require.NoError(t, err)
	var kids []string
	me := strconv.Itoa(os.Getpid())
	for _, st := range stats {
		b, err := os.ReadFile(st)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after ')'.
		rest := string(b[bytes.LastIndexByte(b, ')')+1:])
		fields := strings.Fields(rest)
		if len(fields) > 1 && fields[1] == me && fields[0] != "Z" {
			kids = append(kids, st)
		}
	}
	return kids
}

func TestInterruptedRunLeavesNoAgentBehind(t *testing.T) {
	path := writeExperiment(t, strings.Replace(validExperiment, "duration: 90s", "duration: 30m", 1))
	ctx, cancel := context.WithCancel(context.Background())
	out := t.TempDir()
	done := make(chan int, 1)
	var stdout, stderr syncBuffer
	go func() { done <- execute(ctx, []string{"run", "--out", out, path}, &stdout, &stderr) }()
	require.Eventually(t, func() bool {
		hist, _ := filepath.Glob(filepath.Join(out, "*", "tiny", "state", "client", "history.jsonl"))
		if len(hist) == 0 {
			return false
		}
		b, _ := os.ReadFile(hist[0])
		return strings.Contains(string(b), `"kind":"invoke"`)
	}, 20*time.Second, 10*time.Millisecond, "the client invokes its call")
	require.NotEmpty(t, children(t), "agents run while the experiment does")
	cancel() // what Ctrl-C does through signal.NotifyContext
	select {
	case code := <-done:
		assert.Equal(t, exitInterrupted, code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end after its context was cancelled")
	}
	assert.Empty(t, children(t), "no agent outlives the run")
	assert.Contains(t, stderr.String(), "interrupted")
	assert.Contains(t, stdout.String(), "(partial) | **no** |")

	// What the interrupted run left is judged again, marked partial.
	runs, err := os.ReadDir(out)
	require.NoError(t, err)
	require.Len(t, runs, 1)
	runDir := filepath.Join(out, runs[0].Name())
	assert.FileExists(t, filepath.Join(runDir, "tiny", "partial.json"))
	code, report, stderrReport := chaosrun(t, "report", runDir)
	assert.Equal(t, exitNotMet, code, stderrReport)
	assert.Regexp(t, `\| tiny \| fail \| \w+ \(partial\) \| \*\*no\*\* \|`, report)
	assert.Contains(t, report, "partial results: interrupted at")
}

// syncBuffer is a bytes.Buffer safe to read while a run writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const tinyMatrix = `name: tiny
description: One cut, two clients, one server.
time_scale: 0.02
clients:
  - {target: resumable, cursor: file}
  - {target: naive, backoff: {initial: 1s, max: 1s, retries: 1}}
servers:
  - {target: reference}
workload:
  calls: [{tool: charge, args: {amount_cents: 5}, duration: 90s}]
scenarios:
  - name: cut
    description: A reset 30 s into a 90 s charge.
    faults: [{kind: reset, when: {event: tools_call, tool: charge, after: 30s}}]
expect:
  cut:
    resumable@reference: {verdict: pass}
    naive@reference: {verdict: fail, violations: [no_duplicate_side_effects, no_session_fork, no_orphaned_results, outcomes_resolved]}
`

func TestMatrixRunsEveryCellAndPublishesTheTable(t *testing.T) {
	path := writeExperiment(t, tinyMatrix)
	publish := filepath.Join(t.TempDir(), "docs", "matrix.md")
	code, stdout, stderr := chaosrun(t, "matrix", "-q", "--out", t.TempDir(), "--publish", publish, path)
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	b, err := os.ReadFile(publish)
	require.NoError(t, err)
	assert.Contains(t, string(b), "| resumable | pass |")
	assert.Contains(t, string(b), "| naive | fail: duplicate, fork, orphan, blind retry or unresolved |")

	code, _, stderr = chaosrun(t, "matrix", writeExperiment(t, strings.Replace(tinyMatrix, "naive@reference", "naive@go-sdk", 1)))
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "expect.cut.naive@reference: missing")
}

func TestImageTargetNeedsTheDockerRuntime(t *testing.T) {
	path := writeExperiment(t, strings.Replace(validExperiment, "client:", "server: {target: image, image: example/mcp:1}\nclient:", 1))
	code, _, stderr := chaosrun(t, "run", "--out", t.TempDir(), path)
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, path+":4:18: server.target: image runs only on the docker runtime")
}

func TestRunOutsideTheRepositorySaysWhatToGive(t *testing.T) {
	t.Chdir(t.TempDir())
	code, _, stderr := chaosrun(t, "run")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "no experiments/ folder in ")
	assert.Contains(t, stderr, "chaosrun run path/to/experiment.yaml")
}

func TestRuntimeValuesComplete(t *testing.T) {
	for _, cmd := range []string{"run", "matrix"} {
		code, out, _ := chaosrun(t, "__complete", cmd, "--runtime", "")
		require.Equal(t, exitMet, code)
		assert.Contains(t, out, "local\t")
		assert.Contains(t, out, "docker\t")
		assert.Contains(t, out, "kubernetes\t")
	}
}

// TestRunWritesPagesAndTheStepSummary: a run writes each experiment's
// timeline and the run's index, appends its summary for GitHub Actions, and
// report --html writes the pages again.
func TestRunWritesPagesAndTheStepSummary(t *testing.T) {
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	require.NoError(t, os.WriteFile(summary, []byte("earlier step\n"), 0o644))
	t.Setenv("GITHUB_STEP_SUMMARY", summary)
	out := t.TempDir()
	code, stdout, stderr := chaosrun(t, "run", "-q", "--out", out, writeExperiment(t, validExperiment))
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	b, err := os.ReadFile(summary)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(b), "earlier step\n# chaosrun run "), "appended, not replaced")
	assert.Contains(t, string(b), "| tiny | fail | fail | yes |")

	runs, err := os.ReadDir(out)
	require.NoError(t, err)
	runDir := filepath.Join(out, runs[0].Name())
	for _, page := range []string{"index.html", "tiny/timeline.html"} {
		assert.FileExists(t, filepath.Join(runDir, page))
		require.NoError(t, os.Remove(filepath.Join(runDir, page)))
	}
	assert.NoFileExists(t, filepath.Join(runDir, "tiny", "state", "client", "history.jsonl"), "the history is kept once")
	code, _, stderr = chaosrun(t, "report", "--html", runDir)
	require.Equal(t, exitMet, code, stderr)
	assert.FileExists(t, filepath.Join(runDir, "index.html"))
	assert.FileExists(t, filepath.Join(runDir, "tiny", "timeline.html"))
}

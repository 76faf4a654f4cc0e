package main

import (
	"bufio"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// buildExample builds examples/byo-server, the bring-your-own server of
// the docs, and returns the binary's path.
func buildExample(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "byo-server")
	out, err := exec.Command("go", "build", "-o", bin, "../../examples/byo-server").CombinedOutput()
	require.NoError(t, err, "go build examples/byo-server:\n%s", out)
	return bin
}

// runOne runs one experiment file and returns the exit code, the output
// and the experiment's results folder.
func runOne(t *testing.T, body string) (code int, stdout, stderr, dir string) {
	t.Helper()
	path := writeExperiment(t, body)
	out := t.TempDir()
	code, stdout, stderr = chaosrun(t, "run", "--out", out, path)
	dirs, err := filepath.Glob(filepath.Join(out, "*", "*", "experiment.yaml"))
	require.NoError(t, err)
	require.Len(t, dirs, 1, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	return code, stdout, stderr, filepath.Dir(dirs[0])
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// quoted renders s as a YAML double-quoted string.
func quoted(s string) string { return strconv.Quote(s) }

const byoIncident = `name: byo-double-charge
description: The naive client against a bring-your-own server under an LB idle timeout charges twice.
time_scale: 0.02
server: {target: command, command: [BIN]}
client: {target: naive, backoff: {initial: 1s, max: 1s, retries: 1}}
workload:
  calls: [{tool: charge, args: {amount_cents: 100}, duration: 90s}]
faults:
  - {kind: idle_timeout, at: 0s, params: {idle: 60s, close: reset}}
expect:
  verdict: fail
  violations: [no_duplicate_side_effects, outcomes_resolved]
  figures: {duplicates: ">=1"}
`

func TestCommandTargetReproducesTheIncident(t *testing.T) {
	bin := buildExample(t)
	code, stdout, stderr, dir := runOne(t, strings.Replace(byoIncident, "BIN", quoted(bin), 1))
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stdout, "| byo-double-charge | fail | fail | yes | no_duplicate_side_effects, outcomes_resolved | 1 |")
	assert.Contains(t, stderr, "command server")
	assert.Contains(t, stderr, "settling on the ledger's call_started/call_finished records: no server status:",
		"the example has no /control/status: the runner settles on its ledger records")
	assert.Regexp(t, `byo-server listening on 127\.0\.0\.1:\d+, ledger "http://127\.0\.0\.1:\d+"`,
		readString(t, filepath.Join(dir, "logs", "server.log")), "the command's output is the server agent's log")
}

func TestCommandTargetOnAFixedAddress(t *testing.T) {
	bin := buildExample(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	body := strings.Replace(byoIncident, "command: [BIN]}", "command: [BIN], listen: "+quoted(addr)+"}", 1)
	code, stdout, stderr, dir := runOne(t, strings.Replace(body, "BIN", quoted(bin), 1))
	require.Equal(t, exitMet, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, readString(t, filepath.Join(dir, "logs", "server.log")), "byo-server listening on "+addr,
		"the server is given the fixed address it declared, not a free port")
}

func TestCommandTargetThatDiesAtStartIsAHarnessError(t *testing.T) {
	body := strings.Replace(byoIncident, "command: [BIN]", `command: [sh, -c, "echo no database >&2; exit 7"]`, 1)
	code, stdout, stderr, dir := runOne(t, body)
	require.Equal(t, exitHarness, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)
	assert.Contains(t, stderr, "harness error: start server")
	log := readString(t, filepath.Join(dir, "logs", "server.log"))
	assert.Contains(t, log, "no database", "the command's stderr is in the log")
	assert.Regexp(t, `server command sh exited before it listened on 127\.0\.0\.1:\d+: exit status 7`, log)
	assert.Regexp(t, `harness error: start server: agent exited before it was ready: server command sh exited before it listened on 127\.0\.0\.1:\d+: exit status 7; its last output: no database`,
		stdout, "the summary says why, with what the command printed")
}

const byoRestarts = `name: byo-restarts
description: A bring-your-own server is restarted and crashed mid-call; it has no control endpoints.
time_scale: 0.02
server: {target: command, command: [BIN]}
client: {target: resumable, backoff: {initial: 1s, max: 1s, retries: 50}}
workload:
  calls:
    - {tool: charge, args: {amount_cents: 100}, duration: 40s}
    - {tool: charge, args: {amount_cents: 100}, duration: 40s}
    - {tool: charge, args: {amount_cents: 100}, duration: 40s}
faults:
  - {kind: expire_session, at: 5s} # before any restart, so the server is up to answer 404
  - {kind: restart, at: 30s, params: {role: server, graceful: false}}
  - {kind: crash, at: 60s, params: {role: server}}
expect:
  verdict: pass
`

func TestCommandTargetRestartsOnTheSameAddress(t *testing.T) {
	bin := buildExample(t)
	code, stdout, stderr, dir := runOne(t, strings.Replace(byoRestarts, "BIN", quoted(bin), 1))
	require.NotEqual(t, exitHarness, code, "stdout:\n%s\nstderr:\n%s", stdout, stderr)

	starts := strings.Fields(readString(t, filepath.Join(dir, "state", "server", "starts")))
	require.Len(t, starts, 6, "three starts (pid, address) in the state folder, which outlives restarts")
	assert.NotEqual(t, starts[0], starts[2], "a new process each time")
	assert.Equal(t, []string{starts[1], starts[1]}, []string{starts[3], starts[5]}, "every start on the first one's address")

	faultLog := readString(t, filepath.Join(dir, "faults.jsonl"))
	assert.Contains(t, faultLog, `"detail":"restarted server (SIGKILL)"`)
	assert.Contains(t, faultLog, `"detail":"killed server and started it again"`)
	assert.Contains(t, faultLog, `"error":"inject: control expire: 404 Not Found: 404 page not found"`,
		"a session fault against a server without control endpoints fails with the server's answer")
}

func TestServerAgentRefusesTheImageTargetAndACommandlessCommandTarget(t *testing.T) {
	code, _, stderr := chaosrun(t, "agent", "server", "--target", "image", "--image", "me/server:1")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "server.target image: runs only on the docker runtime")

	code, _, stderr = chaosrun(t, "agent", "server", "--target", "command")
	assert.Equal(t, exitInvalid, code)
	assert.Contains(t, stderr, "--command: target command needs the command to run")
}

func TestCommandGetsTheEnvironmentOfTheContract(t *testing.T) {
	state := t.TempDir()
	script := `echo "$CHAOSRUN_LISTEN_ADDR|$CHAOSRUN_LEDGER_URL|$CHAOSRUN_BASE_UNIX_NANO|$CHAOSRUN_STATE_DIR|$(pwd)" > "$CHAOSRUN_STATE_DIR/env"; exit 3`
	code, stdout, stderr := chaosrun(t, "agent", "server", "--target", "command", "--state", state,
		"--ledger", "http://127.0.0.1:9", "--base", "1700000000000000000", "--command", "sh", "--command=-c", "--command", script)
	require.Equal(t, exitHarness, code, stderr)
	assert.Empty(t, stdout, "no URL is announced for a command that never listened")
	assert.Contains(t, stderr, "exit status 3")

	fields := strings.Split(strings.TrimSpace(readString(t, filepath.Join(state, "env"))), "|")
	require.Len(t, fields, 5)
	host, port, err := net.SplitHostPort(fields[0])
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port, "port 0 is replaced by a free port")
	wd, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, []string{"http://127.0.0.1:9", "1700000000000000000", state, wd}, fields[1:],
		"ledger, clock and state folder; the command runs in the runner's working directory")
}

// startAgent starts the test binary as a server agent serving cmd in its own
// process group, and returns it with its announced URL.
func startAgent(t *testing.T, args ...string) (*exec.Cmd, string, *syncBuffer) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	agent := exec.Command(exe, append([]string{"agent", "server", "--target", "command", "--state", t.TempDir()}, args...)...)
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logs := &syncBuffer{}
	agent.Stderr = logs
	stdout, err := agent.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, agent.Start())
	t.Cleanup(func() { _ = syscall.Kill(-agent.Process.Pid, syscall.SIGKILL) })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the agent announces its URL (log: %s)", logs)
	return agent, strings.TrimSpace(line), logs
}

func TestServerAgentForwardsSIGTERMToTheCommand(t *testing.T) {
	bin := buildExample(t)
	agent, url, logs := startAgent(t, "--command", bin)
	require.Regexp(t, `^http://127\.0\.0\.1:\d+$`, url)
	resp, err := http.Get(url + "/mcp")
	require.NoError(t, err, "the command listens by the time the URL is announced")
	resp.Body.Close()

	// Only the agent is signalled: the command hears of it from the agent.
	require.NoError(t, agent.Process.Signal(syscall.SIGTERM))
	waited := make(chan error, 1)
	go func() { waited <- agent.Wait() }()
	select {
	case err := <-waited:
		require.NoError(t, err, logs.String())
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not exit after SIGTERM")
	}
	assert.Contains(t, logs.String(), "byo-server stopping", "the command got SIGTERM and stopped gracefully")
	_, err = http.Get(url + "/mcp")
	require.Error(t, err, "the command is gone with the agent")
}

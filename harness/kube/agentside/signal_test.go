package agentside

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProc is a /proc that lists only process 1, this test and a child
// (each a link to its real entry), so that Signal reaches nothing else.
func fakeProc(t *testing.T, child int) string {
	t.Helper()
	dir := t.TempDir()
	for _, pid := range []int{1, os.Getpid(), child} {
		require.NoError(t, os.Symlink(filepath.Join("/proc", strconv.Itoa(pid)), filepath.Join(dir, strconv.Itoa(pid))))
	}
	return dir
}

func TestSignalStopsContinuesAndKillsEveryProcessButOneAndItself(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	proc := fakeProc(t, cmd.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	n, err := Signal(ctx, proc, os.Getpid(), syscall.SIGSTOP)
	require.NoError(t, err)
	assert.Equal(t, 1, n, "only the child: process 1 and the caller are left alone")
	s, ok := state(proc, cmd.Process.Pid)
	require.True(t, ok)
	assert.Equal(t, byte('T'), s, "stopped when Signal returns")

	_, err = Signal(ctx, proc, os.Getpid(), syscall.SIGCONT)
	require.NoError(t, err)
	require.Eventually(t, func() bool { s, _ := state(proc, cmd.Process.Pid); return s != 'T' }, 2*time.Second, 10*time.Millisecond)

	_, err = Signal(ctx, proc, os.Getpid(), syscall.SIGKILL)
	require.NoError(t, err)
	s, ok = state(proc, cmd.Process.Pid)
	assert.True(t, !ok || gone(s), "gone (or a zombie) when Signal returns, state %c", s)
	select {
	case err := <-exited:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, syscall.SIGKILL, exit.Sys().(syscall.WaitStatus).Signal())
	case <-time.After(5 * time.Second):
		t.Fatal("the child outlived SIGKILL")
	}
}

func TestSignalFailsWithNothingToSignal(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Symlink("/proc/1", filepath.Join(dir, "1")))
	_, err := Signal(context.Background(), dir, os.Getpid(), syscall.SIGKILL)
	require.ErrorContains(t, err, "no process to signal")
}

func TestSignalTermWaitsUntilTheProcessesAreGone(t *testing.T) {
	// A shell that takes a while to end after SIGTERM.
	cmd := exec.Command("sh", "-c", "trap 'sleep 0.3; exit 0' TERM; while :; do sleep 0.05; done")
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(100 * time.Millisecond) // the trap is set
	proc := fakeProc(t, cmd.Process.Pid)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	began := time.Now()
	_, err := Signal(ctx, proc, os.Getpid(), syscall.SIGTERM)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond, "it waited for the trap to end the shell")
	s, ok := state(proc, cmd.Process.Pid)
	assert.True(t, !ok || gone(s), "state %c", s)
}

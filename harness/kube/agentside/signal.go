package agentside

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Signals are the signals Signal sends, by the names the runtime uses.
var Signals = map[string]syscall.Signal{
	"KILL": syscall.SIGKILL,
	"TERM": syscall.SIGTERM,
	"STOP": syscall.SIGSTOP,
	"CONT": syscall.SIGCONT,
}

// Signal sends sig to every process under procRoot (a /proc) but process
// 1 and self, and returns how many it signalled. After SIGSTOP it waits
// until every one of them is stopped, after SIGKILL and SIGTERM until every
// one is gone, as long as ctx allows. It fails when there is no process to
// signal.
func Signal(ctx context.Context, procRoot string, self int, sig syscall.Signal) (int, error) {
	pids, err := others(procRoot, self)
	if err != nil {
		return 0, err
	}
	if len(pids) == 0 {
		return 0, errors.New("no process to signal but process 1 and this one: is the pod's process namespace shared?")
	}
	var errs []error
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %d: %w", pid, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	switch sig {
	case syscall.SIGSTOP:
		return len(pids), await(ctx, procRoot, pids, "stopped", stopped)
	case syscall.SIGKILL, syscall.SIGTERM:
		return len(pids), await(ctx, procRoot, pids, "gone", gone)
	}
	return len(pids), nil
}

// others lists the processes under procRoot but 1 and self.
func others(procRoot string, self int) ([]int, error) {
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == 1 || pid == self {
			continue
		}
		pids = append(pids, pid)
	}
	return pids, nil
}

// await waits until every process of pids is in a state that done
// accepts (a process that is gone is always done), and names that state
// in its error.
func await(ctx context.Context, procRoot string, pids []int, what string, done func(byte) bool) error {
	for {
		left := 0
		for _, pid := range pids {
			if s, ok := state(procRoot, pid); ok && !done(s) {
				left++
			}
		}
		if left == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d process(es) not %s: %w", left, what, ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stopped: T (stopped), t (traced), or a process already dead.
func stopped(s byte) bool { return s == 'T' || s == 't' || gone(s) }

// gone: a zombie waiting for its parent outside the pod, or dead.
func gone(s byte) bool { return s == 'Z' || s == 'X' }

// state is the state letter of /proc/PID/stat; false when the process is
// gone.
func state(procRoot string, pid int) (byte, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// pid (comm) STATE ...: comm may hold spaces, so look after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0, false
	}
	return b[i+2], true
}

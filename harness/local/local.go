// Package local is the default runtime: every agent is a child process of
// the chaosrun binary on 127.0.0.1 with an ephemeral port, so a crash is a
// real SIGKILL and a pause a real SIGSTOP. No Docker is needed.
//
// Each agent runs in its own process group, is told the runner's pid (an
// agent exits when its parent goes away), and is killed on Close, so no
// agent outlives a run, whichever way the run ends.
package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// StopGrace is how long a graceful stop waits after SIGTERM before SIGKILL.
const StopGrace = 30 * time.Second

// Runtime starts agents as child processes of Binary.
type Runtime struct {
	binary string
	// Timeout bounds how long an agent may take to print its URL.
	readyTimeout time.Duration

	mu     sync.Mutex
	procs  []*process
	closed bool
}

// New returns a runtime that starts agents from the chaosrun binary at path.
func New(binary string) *Runtime {
	return &Runtime{binary: binary, readyTimeout: 20 * time.Second}
}

// Start starts an agent and waits for its URL. It runs no image.
func (r *Runtime) Start(ctx context.Context, spec agent.Spec) (agent.Process, error) {
	if spec.Image != "" {
		return nil, fmt.Errorf("start %s: image %s: the local runtime runs no images (the docker runtime does)", spec.Role, spec.Image)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("local runtime: closed")
	}
	p := &process{rt: r, spec: spec, addr: "127.0.0.1:0"}
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if err := os.MkdirAll(spec.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	if err := p.start(ctx); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	return p, nil
}

// Close kills every agent still running and waits for them. Idempotent.
func (r *Runtime) Close() error {
	r.mu.Lock()
	r.closed = true
	procs := r.procs
	r.mu.Unlock()
	for _, p := range procs {
		p.kill()
	}
	return nil
}

// process is one agent across its incarnations.
type process struct {
	rt   *Runtime
	spec agent.Spec

	mu      sync.Mutex
	cmd     *exec.Cmd
	url     string
	addr    string        // listen address; fixed after the first start
	exited  chan struct{} // closed when the current incarnation exits
	planned bool          // the harness ended the current incarnation itself
	ownExit chan int      // exit codes of incarnations that ended on their own
}

func (p *process) args() []string {
	return append(p.spec.CommandLine(p.spec.StateDir, p.addr), "--parent-pid", strconv.Itoa(os.Getpid()))
}

func (p *process) start(ctx context.Context) error {
	p.rt.mu.Lock()
	closed := p.rt.closed
	p.rt.mu.Unlock()
	if closed {
		return errors.New("local runtime: closed")
	}
	logf, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.rt.binary, p.args()...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	p.mu.Lock()
	p.cmd, p.exited, p.planned = cmd, exited, false
	if p.ownExit == nil {
		p.ownExit = make(chan int, 16)
	}
	p.mu.Unlock()

	lines := bufio.NewReader(stdout)
	urlc := make(chan string, 1)
	go func() {
		if p.spec.Serves {
			if line, err := lines.ReadString('\n'); err == nil {
				urlc <- line
			}
		}
		_, _ = io.Copy(logf, lines) // anything else an agent prints goes to its log
	}()
	go p.reap(cmd, logf, exited)
	// A Close that ran while this process was being started did not see
	// it: end it here.
	p.rt.mu.Lock()
	closed = p.rt.closed
	p.rt.mu.Unlock()
	if closed {
		p.kill()
		return errors.New("local runtime: closed")
	}
	if !p.spec.Serves {
		return nil
	}
	return p.awaitURL(ctx, urlc, exited)
}

func (p *process) reap(cmd *exec.Cmd, logf *os.File, exited chan struct{}) {
	err := cmd.Wait()
	logf.Close()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		code = -1
	}
	p.mu.Lock()
	planned := p.planned
	p.mu.Unlock()
	close(exited)
	if !planned {
		p.ownExit <- code
	}
}

func (p *process) awaitURL(ctx context.Context, urlc <-chan string, exited <-chan struct{}) error {
	timer := time.NewTimer(p.rt.readyTimeout)
	defer timer.Stop()
	select {
	case line := <-urlc:
		u, err := url.Parse(trimNL(line))
		if err != nil || u.Host == "" {
			p.kill()
			return fmt.Errorf("agent printed %q instead of its URL (see %s)", trimNL(line), p.spec.LogPath)
		}
		p.mu.Lock()
		p.url, p.addr = u.String(), u.Host
		p.mu.Unlock()
		return nil
	case <-exited:
		return fmt.Errorf("agent exited before it was ready (see %s)", p.spec.LogPath)
	case <-timer.C:
		p.kill()
		return fmt.Errorf("agent printed no URL within %s (see %s)", p.rt.readyTimeout, p.spec.LogPath)
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

func trimNL(s string) string {
	for len(s) > 0 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r') {
		s = s[:len(s)-1]
	}
	return s
}

func (p *process) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

func (p *process) PeerAddr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// signal sends sig to the current incarnation's process group.
func (p *process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	if cmd == nil || isClosed(exited) {
		return agent.ErrNotRunning
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// stop ends the current incarnation as a planned exit.
func (p *process) stop(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	p.planned = true
	exited := p.exited
	p.mu.Unlock()
	if exited == nil || isClosed(exited) {
		return nil
	}
	_ = p.signal(syscall.SIGCONT) // a paused agent cannot handle SIGTERM
	if graceful {
		if err := p.signal(syscall.SIGTERM); err != nil && !errors.Is(err, agent.ErrNotRunning) {
			return err
		}
		select {
		case <-exited:
			return nil
		case <-time.After(StopGrace):
		case <-ctx.Done():
		}
	}
	_ = p.signal(syscall.SIGKILL)
	<-exited
	return nil
}

func (p *process) Restart(ctx context.Context, graceful bool) error {
	if err := p.stop(ctx, graceful); err != nil {
		return fmt.Errorf("restart %s: %w", p.spec.Role, err)
	}
	if err := p.start(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", p.spec.Role, err)
	}
	return nil
}

// Pause stops the agent's process group and returns once the agent is
// stopped, so a fault logged as injected is in effect.
func (p *process) Pause(ctx context.Context) error {
	if err := p.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	p.mu.Lock()
	pid := p.cmd.Process.Pid
	p.mu.Unlock()
	stat := fmt.Sprintf("/proc/%d/stat", pid)
	for range 200 {
		b, err := os.ReadFile(stat)
		if err != nil {
			return err
		}
		// pid (comm) STATE ...: comm may hold spaces, so look after ')'.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'T' {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	return fmt.Errorf("pause %s: the agent did not stop within a second", p.spec.Role)
}

func (p *process) Resume(context.Context) error { return p.signal(syscall.SIGCONT) }

func (p *process) Stop(ctx context.Context, graceful bool) error { return p.stop(ctx, graceful) }

func (p *process) kill() { _ = p.stop(context.Background(), false) }

func (p *process) Wait(ctx context.Context) (int, error) {
	p.mu.Lock()
	own := p.ownExit
	p.mu.Unlock()
	select {
	case code := <-own:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

func (p *process) CopyOut(_ context.Context, rel, dst string) error {
	src := filepath.Join(p.spec.StateDir, rel)
	if src == dst {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

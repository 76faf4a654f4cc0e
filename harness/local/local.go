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
	"slices"
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
// It raises the open-file limit its agents inherit as far as it may (see
// [OpenFiles]).
func New(binary string) *Runtime {
	_, _ = raiseOpenFiles()
	return &Runtime{binary: binary, readyTimeout: 20 * time.Second}
}

// OpenFiles returns the open-file limit (RLIMIT_NOFILE) the runtime's
// agents start with, and why it is below what the runtime asked for, if it
// is.
func OpenFiles() (syscall.Rlimit, error) { return raiseOpenFiles() }

// Name is the local runtime's name, as --runtime takes it.
const Name = "local"

// Capabilities is what the local runtime runs: no images; its agents
// share the runner's loopback, so a server may listen on a fixed address
// and the agents reach the programs the runner starts there (nginx,
// HAProxy, redis-server); it pauses an agent with SIGSTOP, and runs the
// user's programs as they are. Its agents share
// one open-file limit, which the runtime's own Capabilities method reads.
func Capabilities() agent.Capabilities {
	return agent.Capabilities{Runtime: Name, FixedAddresses: true, Daemons: []string{"nginx", "haproxy", "redis"}, Pause: true, Programs: true,
		Why: map[string]string{agent.CapServices: "a Service is the cluster's; the local runtime's agents are processes on loopback, balanced by nginx or haproxy (balancer.kind)"}}
}

// Capabilities is the package's, with the open-file limit its agents
// start with.
func (r *Runtime) Capabilities() agent.Capabilities {
	c := Capabilities()
	c.OpenFiles = r.OpenFiles()
	return c
}

// OpenFiles is how many files each agent may open.
func (r *Runtime) OpenFiles() uint64 {
	lim, _ := raiseOpenFiles()
	return lim.Cur
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
	p.Lifecycle = agent.NewLifecycle(spec.Role, p.launch)
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if err := os.MkdirAll(spec.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	if spec.Config != nil {
		if err := os.WriteFile(filepath.Join(spec.StateDir, agent.ConfigFile), spec.Config, 0o644); err != nil {
			return nil, fmt.Errorf("start %s: %w", spec.Role, err)
		}
	}
	if err := p.Start(ctx); err != nil {
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
		_ = p.Close(context.Background())
	}
	return nil
}

// process is one agent across its incarnations; the Lifecycle keeps the
// books of restarts and exits.
type process struct {
	*agent.Lifecycle
	rt   *Runtime
	spec agent.Spec

	mu    sync.Mutex
	url   string
	addr  string        // listen address; fixed after the first start
	usage []agent.Usage // of the incarnations that exited
}

var _ agent.Process = (*process)(nil)

func (p *process) args() []string {
	p.mu.Lock()
	addr := p.addr
	p.mu.Unlock()
	return append(p.spec.CommandLine(p.spec.StateDir, addr), "--parent-pid", strconv.Itoa(os.Getpid()))
}

// incarnation is one child process of an agent, in a process group of its
// own.
type incarnation struct {
	p      *process
	cmd    *exec.Cmd
	urlc   <-chan string // a serving agent's first stdout line
	exited chan struct{} // closed once the process has exited and code is set
	code   int
}

// launch starts a child process of the agent with its stderr, and what it
// prints after its URL, appended to the log.
func (p *process) launch(context.Context) (agent.Incarnation, error) {
	logf, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(p.rt.binary, p.args()...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Stderr = logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	urlc := make(chan string, 1)
	in := &incarnation{p: p, cmd: cmd, urlc: urlc, exited: make(chan struct{})}
	lines := bufio.NewReader(stdout)
	go func() {
		if p.spec.Serves {
			if line, err := lines.ReadString('\n'); err == nil {
				urlc <- line
			}
		}
		_, _ = io.Copy(logf, lines) // anything else an agent prints goes to its log
	}()
	go in.reap(logf)
	return in, nil
}

func (in *incarnation) reap(logf *os.File) {
	err := in.cmd.Wait()
	logf.Close()
	in.p.measure(in.cmd.ProcessState)
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		in.code = ee.ExitCode()
	case err != nil:
		in.code = -1
	}
	close(in.exited)
}

// measure keeps what an exited incarnation used.
func (p *process) measure(ps *os.ProcessState) {
	if ps == nil {
		return
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.usage = append(p.usage, agent.Usage{
		Role: p.spec.Role, Incarnation: len(p.usage) + 1, PeakRSSKiB: ru.Maxrss, // KiB on Linux
		UserMS: ps.UserTime().Milliseconds(), SystemMS: ps.SystemTime().Milliseconds(),
	})
}

// Usage returns what each exited incarnation used.
func (p *process) Usage() []agent.Usage {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.usage)
}

var _ agent.Measured = (*process)(nil)

func (in *incarnation) Exited() <-chan struct{} { return in.exited }

func (in *incarnation) ExitCode() int { return in.code }

// Ready waits for a serving agent's URL line and takes its address, which
// restarts then keep.
func (in *incarnation) Ready(ctx context.Context) error {
	p := in.p
	if !p.spec.Serves {
		return nil
	}
	line, err := agent.AwaitURL(ctx, in.urlc, in.exited, p.rt.readyTimeout, p.spec.LogPath)
	if err != nil {
		return err
	}
	u, err := url.Parse(trimNL(line))
	if err != nil || u.Host == "" {
		return fmt.Errorf("agent printed %q instead of its URL (see %s)", trimNL(line), p.spec.LogPath)
	}
	p.mu.Lock()
	p.url, p.addr = u.String(), u.Host
	p.mu.Unlock()
	return nil
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

// signal sends sig to the incarnation's process group.
func (in *incarnation) signal(sig syscall.Signal) error {
	select {
	case <-in.exited:
		return agent.ErrNotRunning
	default:
	}
	return syscall.Kill(-in.cmd.Process.Pid, sig)
}

// Stop sends SIGTERM and waits StopGrace (or until ctx ends) when graceful,
// then SIGKILL, and waits for the exit.
func (in *incarnation) Stop(ctx context.Context, graceful bool) error {
	_ = in.signal(syscall.SIGCONT) // a paused agent cannot handle SIGTERM
	if graceful {
		if err := in.signal(syscall.SIGTERM); err != nil && !errors.Is(err, agent.ErrNotRunning) {
			return err
		}
		select {
		case <-in.exited:
			return nil
		case <-time.After(StopGrace):
		case <-ctx.Done():
		}
	}
	_ = in.signal(syscall.SIGKILL)
	<-in.exited
	return nil
}

// Pause stops the agent's process group and returns once the agent is
// stopped, so a fault logged as injected is in effect.
func (in *incarnation) Pause(ctx context.Context) error {
	if err := in.signal(syscall.SIGSTOP); err != nil {
		return err
	}
	stat := fmt.Sprintf("/proc/%d/stat", in.cmd.Process.Pid)
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
	return fmt.Errorf("pause %s: the agent did not stop within a second", in.p.spec.Role)
}

func (in *incarnation) Resume(context.Context) error { return in.signal(syscall.SIGCONT) }

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

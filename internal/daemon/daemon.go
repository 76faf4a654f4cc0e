// Package daemon runs a third-party server binary (nginx, HAProxy,
// redis-server) for one experiment: a child process in its own process
// group, killed with its parent, listening on a loopback port, and ready
// once that port accepts a connection. Its output goes to a log file.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrMissing is wrapped when a binary is not installed.
var ErrMissing = errors.New("binary not found")

// readyTimeout bounds how long a started daemon may take to accept
// connections.
const readyTimeout = 10 * time.Second

// stopGrace is how long Close waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Find returns the path of a binary. Debian puts server binaries in
// /usr/sbin, which a non-root PATH may lack, so that is looked in too. A
// missing binary is an error wrapping ErrMissing that names the Debian
// package holding it.
func Find(binary, pkg string) (string, error) {
	if p, err := exec.LookPath(binary); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, binary)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not installed (Debian: apt-get install %s)", ErrMissing, binary, pkg)
}

// Spec is one daemon to start.
type Spec struct {
	Name   string // names it in errors
	Binary string // its path (see Find)
	// Listen is the host:port it must listen on; empty takes a free
	// loopback port.
	Listen string
	// Prepare, when set, runs before each launch with the address: to
	// render a configuration that names it. Args are the daemon's
	// arguments for the address.
	Prepare func(addr string) error
	Args    func(addr string) []string
	Log     string   // receives its stdout and stderr, appended
	Tail    []string // files whose end a start error quotes, besides Log
	// Graceful is the signal that asks the daemon to finish what it serves
	// and exit (nginx: SIGQUIT, HAProxy: SIGUSR1); 0 is SIGTERM.
	Graceful syscall.Signal
}

// Process is a running daemon, across restarts. Close stops it for good;
// it is idempotent.
type Process struct {
	spec Spec
	addr string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	closed bool
}

// Addr is host:port the daemon listens on, kept across restarts.
func (p *Process) Addr() string { return p.addr }

// Exited is closed once the current incarnation has exited.
func (p *Process) Exited() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited
}

// Start starts the daemon and returns once it accepts connections. A free
// port is free only until the daemon binds it, so a start that loses it to
// another process is tried again on another port.
func Start(ctx context.Context, s Spec) (*Process, error) {
	for attempt := 1; ; attempt++ {
		addr := s.Listen
		if addr == "" {
			var err error
			if addr, err = freePort(); err != nil {
				return nil, fmt.Errorf("start %s: %w", s.Name, err)
			}
		}
		p, err := launch(ctx, s, addr)
		if err == nil || s.Listen != "" || attempt == 3 || ctx.Err() != nil {
			return p, err
		}
	}
}

func launch(ctx context.Context, s Spec, addr string) (*Process, error) {
	if s.Prepare != nil {
		if err := s.Prepare(addr); err != nil {
			return nil, err
		}
	}
	p := &Process{spec: s, addr: addr}
	if err := p.Start(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// Start starts a new incarnation of a stopped daemon on the same address
// and waits until it accepts connections.
func (p *Process) Start(ctx context.Context) error {
	s := p.spec
	logf, err := os.OpenFile(s.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	defer logf.Close() // the child has its own copy
	cmd := exec.Command(s.Binary, s.Args(p.addr)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return fmt.Errorf("start %s: closed", s.Name)
	}
	if err := cmd.Start(); err != nil {
		p.mu.Unlock()
		return fmt.Errorf("start %s: %w", s.Name, err)
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	p.mu.Unlock()
	go func() { _ = cmd.Wait(); close(exited) }()
	if err := p.ready(ctx, exited); err != nil {
		_ = p.Stop(context.Background(), false)
		return err
	}
	return nil
}

// ready waits until the daemon accepts a connection, or it exits.
func (p *Process) ready(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", p.addr)
		if err == nil {
			conn.Close()
			// Another process that took the port would answer too: the
			// daemon, failing to bind, exits within moments.
			select {
			case <-exited:
				return fmt.Errorf("start %s: it exited after %s began to accept connections (another process holds the port?): %s", p.spec.Name, p.addr, p.tail())
			case <-time.After(50 * time.Millisecond):
			}
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("start %s: it exited before listening on %s: %s", p.spec.Name, p.addr, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("start %s: not listening on %s after %s (see %s)", p.spec.Name, p.addr, readyTimeout, p.spec.Log)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail is the end of the daemon's output, for an error.
func (p *Process) tail() string {
	var out []byte
	for _, name := range append([]string{p.spec.Log}, p.spec.Tail...) {
		b, _ := os.ReadFile(name)
		out = append(out, b...)
	}
	s := strings.TrimSpace(string(out))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// Stop ends the current incarnation: its graceful signal and up to a grace
// period (or until ctx ends) when graceful, then SIGKILL; it waits for the
// exit.
// A stopped daemon can be started again.
func (p *Process) Stop(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited: // already gone (a crash fault that keeps it down): its group may be another's now
		return nil
	default:
	}
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGCONT) // a paused daemon cannot handle a signal
	if graceful {
		sig := p.spec.Graceful
		if sig == 0 {
			sig = syscall.SIGTERM
		}
		_ = syscall.Kill(pgid, sig)
		select {
		case <-exited:
			return nil
		case <-time.After(stopGrace):
		case <-ctx.Done():
		}
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	<-exited
	return nil
}

// Restart stops the daemon (see Stop) and starts it again on its address.
func (p *Process) Restart(ctx context.Context, graceful bool) error {
	if err := p.Stop(ctx, graceful); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Pause freezes the daemon's process group (SIGSTOP); Resume thaws it.
func (p *Process) Pause(context.Context) error { return p.signal(syscall.SIGSTOP) }

// Resume thaws a paused daemon.
func (p *Process) Resume(context.Context) error { return p.signal(syscall.SIGCONT) }

func (p *Process) signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, exited := p.cmd, p.exited
	p.mu.Unlock()
	select {
	case <-exited:
		return fmt.Errorf("%s: not running", p.spec.Name)
	default:
	}
	return syscall.Kill(-cmd.Process.Pid, sig)
}

// Close stops the daemon for good, gracefully, and waits for it to exit.
// Later Starts fail. Idempotent.
func (p *Process) Close() error {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	return p.Stop(context.Background(), true)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

package byo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// Defaults of a Supervisor's zero timeouts.
const (
	DefaultReadyTimeout = 15 * time.Second
	DefaultDrain        = 30 * time.Second
)

// readyPoll is how often readiness is probed while a command starts.
const readyPoll = 10 * time.Millisecond

// ErrNoCommand is Start's error for a Supervisor without a command.
var ErrNoCommand = errors.New("target command needs the command to run")

// Supervisor runs a bring-your-own server command as a child under the
// contract. Set its fields, then call Start; Serve and Stop end it.
//
// The command stays in its parent's process group, so a crash (SIGKILL of
// the group) or a pause (SIGSTOP) of the parent takes the command along; if
// the parent dies alone, the command is killed too.
type Supervisor struct {
	// Command is the command and its arguments. No shell is involved: a
	// bare name is looked up in PATH, and a relative path resolves against
	// the working directory, where the command runs. The arguments may hold
	// the placeholders {addr}, {host} and {port} (see [Env.Expand]), for
	// servers that take their address as a flag.
	Command []string
	// Env is the contract's environment. At Start a ListenAddr with port 0
	// becomes a free port the kernel picked, and StateDir is made absolute
	// and created.
	Env Env
	// Output receives the command's stdout and stderr; nil discards them.
	Output io.Writer
	// ReadyTimeout bounds how long the command may take to accept
	// connections; zero means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// Drain is how long Stop waits after SIGTERM before it kills the
	// command; zero means DefaultDrain.
	Drain time.Duration

	env    Env   // Env as resolved by Start
	tail   *tail // the command's last lines of output, for errors
	cmd    *exec.Cmd
	exited chan struct{} // closed once the command has exited and err is set
	err    error

	stopOnce sync.Once
	stopErr  error
}

// Start resolves the environment, starts the command with it added to this
// process's environment, and returns once the listen address accepts TCP
// connections. If the command exits first, Start fails at once with its
// exit status; if it does not listen within ReadyTimeout, or ctx ends, Start
// stops it and fails.
func (s *Supervisor) Start(ctx context.Context) error {
	if len(s.Command) == 0 {
		return ErrNoCommand
	}
	env, err := resolve(s.Env)
	if err != nil {
		return err
	}
	s.env = env
	if err := s.startChild(); err != nil {
		return err
	}
	if err := s.awaitListening(ctx, s.readyTimeout()); err != nil {
		return errors.Join(err, s.Stop())
	}
	return nil
}

// resolve picks the port of a port-0 address and makes the state folder
// absolute and present.
func resolve(env Env) (Env, error) {
	addr, err := pickAddr(env.ListenAddr)
	if err != nil {
		return Env{}, err
	}
	env.ListenAddr = addr
	state, err := filepath.Abs(env.StateDir)
	if err == nil {
		err = os.MkdirAll(state, 0o755)
	}
	if err != nil {
		return Env{}, fmt.Errorf("state folder %s: %w", env.StateDir, err)
	}
	env.StateDir = state
	return env, nil
}

// Addr is the address the command listens on, once Start has returned.
func (s *Supervisor) Addr() string { return s.env.ListenAddr }

// Serve waits, after a successful Start, until ctx ends or the command
// exits. When ctx ends it stops the command and returns Stop's error; an
// exit of the command's own is an error whatever its status, because a
// server is not meant to end while it serves.
func (s *Supervisor) Serve(ctx context.Context) error {
	select {
	case <-s.exited:
		return fmt.Errorf("server command %s exited while serving: %s%s", s.name(), s.status(), s.tail.Said())
	case <-ctx.Done():
	}
	return s.Stop()
}

// Stop sends the command SIGTERM, waits up to Drain for it to exit, then
// kills it. How a command exits after SIGTERM is its own business: only a
// kill is reported as an error. Stop is idempotent and safe from any
// goroutine once Start has returned: every call returns once the command has
// exited, with the first call's result. Before Start it does nothing.
func (s *Supervisor) Stop() error {
	if s.cmd == nil {
		return nil
	}
	s.stopOnce.Do(func() { s.stopErr = s.stop(s.drain()) })
	return s.stopErr
}

func (s *Supervisor) stop(drain time.Duration) error {
	select {
	case <-s.exited:
		return nil
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(drain)
	defer timer.Stop()
	select {
	case <-s.exited:
		return nil
	case <-timer.C:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return fmt.Errorf("server command %s did not exit within %s of SIGTERM: killed", s.name(), drain)
}

func (s *Supervisor) readyTimeout() time.Duration {
	if s.ReadyTimeout > 0 {
		return s.ReadyTimeout
	}
	return DefaultReadyTimeout
}

func (s *Supervisor) drain() time.Duration {
	if s.Drain > 0 {
		return s.Drain
	}
	return DefaultDrain
}

func (s *Supervisor) name() string { return s.Command[0] }

// pickAddr returns addr, or for port 0 a free port the kernel picked: bound
// and released at once, so the command can bind it. A restart is given the
// concrete address back and keeps it.
func pickAddr(addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	if port != "0" {
		return addr, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("pick a port on %s: %w", addr, err)
	}
	picked := ln.Addr().String()
	return picked, ln.Close()
}

// startChild starts the command with the resolved environment added to this
// process's. It stays in this process's group: the runtimes' crash and
// pause faults signal the group.
func (s *Supervisor) startChild() error {
	argv := s.env.Expand(s.Command)
	c := exec.Command(argv[0], argv[1:]...)
	c.Env = append(os.Environ(), s.env.Environ()...)
	s.tail = newTail(tailLines)
	var out io.Writer = s.tail
	if s.Output != nil {
		out = io.MultiWriter(s.Output, s.tail)
	}
	c.Stdout, c.Stderr = out, out
	c.WaitDelay = time.Second // a grandchild holding the output open cannot stall the exit
	// If the parent dies without stopping it (SIGKILL of the parent alone),
	// the command goes too.
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start server command: %w", err)
	}
	s.cmd, s.exited = c, make(chan struct{})
	go func() {
		s.err = c.Wait()
		close(s.exited)
	}()
	return nil
}

// status describes how the command exited; call it once exited is closed.
func (s *Supervisor) status() string {
	if s.err == nil {
		return "exit status 0"
	}
	return s.err.Error()
}

// awaitListening waits until the listen address accepts TCP connections,
// for at most timeout; it fails at once, with the exit status, if the
// command exits.
func (s *Supervisor) awaitListening(ctx context.Context, timeout time.Duration) error {
	addr := s.env.ListenAddr
	probe := dialable(addr)
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(readyPoll)
	defer tick.Stop()
	for {
		if conn, err := net.DialTimeout("tcp", probe, readyPoll*10); err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("server command %s exited before it listened on %s: %s%s", s.name(), addr, s.status(), s.tail.Said())
		case <-deadline.C:
			return fmt.Errorf("server command %s did not listen on %s within %s%s", s.name(), addr, timeout, s.tail.Said())
		case <-ctx.Done():
			return fmt.Errorf("server command %s: stopped before it listened: %w", s.name(), ctx.Err())
		case <-tick.C:
		}
	}
}

// dialable turns a listen address into one to dial: an unspecified host
// (0.0.0.0, ::, empty) is reached on loopback.
func dialable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

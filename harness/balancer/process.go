package balancer

import (
	"context"
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

// readyTimeout bounds how long a started balancer may take to accept
// connections.
const readyTimeout = 10 * time.Second

// stopGrace is how long Close waits after SIGTERM before SIGKILL.
const stopGrace = 5 * time.Second

// Binary returns the path of the kind's binary. Debian puts both in
// /usr/sbin, which a non-root PATH may lack, so that is looked in too. A
// missing binary is an error wrapping ErrMissing that names the package.
func Binary(kind string) (string, error) {
	if p, err := exec.LookPath(kind); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/sbin"} {
		p := filepath.Join(dir, kind)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s is not installed (Debian: apt-get install %s)", ErrMissing, kind, Package(kind))
}

// Process is a running balancer. Close stops it; it is idempotent.
type Process struct {
	cfg    Config
	cmd    *exec.Cmd
	exited chan struct{}
	once   sync.Once
}

// Addr is host:port the balancer listens on.
func (p *Process) Addr() string { return p.cfg.Listen }

// ConfigPath is the rendered configuration the balancer runs.
func (p *Process) ConfigPath() string { return filepath.Join(p.cfg.Dir, p.cfg.FileName()) }

// LogPath is where the balancer's own output goes.
func (p *Process) LogPath() string { return filepath.Join(p.cfg.Dir, p.cfg.Kind+".log") }

// Start renders c into c.Dir, starts the balancer on it and returns once it
// accepts connections. An empty c.Listen takes a free loopback port; as
// the port is free only until the balancer binds it, a start that loses
// it to another process is tried again on another port.
func Start(ctx context.Context, c Config) (*Process, error) {
	bin, err := Binary(c.Kind)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	pick := c.Listen == ""
	for attempt := 1; ; attempt++ {
		if pick {
			if c.Listen, err = freePort(); err != nil {
				return nil, fmt.Errorf("start %s: %w", c.Kind, err)
			}
		}
		p, err := launch(ctx, bin, c)
		if err == nil || !pick || attempt == 3 || ctx.Err() != nil {
			return p, err
		}
	}
}

func launch(ctx context.Context, bin string, c Config) (*Process, error) {
	p := &Process{cfg: c, exited: make(chan struct{})}
	f, err := os.Create(p.ConfigPath())
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	if err := Render(f, c); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	logf, err := os.OpenFile(p.LogPath(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	defer logf.Close() // the child has its own copy
	p.cmd = exec.Command(bin, args(c, p.ConfigPath())...)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.exited) }()
	if err := p.ready(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

func args(c Config, conf string) []string {
	if c.Kind == HAProxy {
		return []string{"-db", "-f", conf} // -db: in the foreground
	}
	return []string{"-p", c.Dir, "-e", filepath.Join(c.Dir, "error.log"), "-c", conf}
}

// ready waits until the balancer accepts a connection, or it exits.
func (p *Process) ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", p.cfg.Listen)
		if err == nil {
			conn.Close()
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("start %s: it exited before listening on %s: %s", p.cfg.Kind, p.cfg.Listen, p.tail())
		case <-ctx.Done():
			return fmt.Errorf("start %s: not listening on %s after %s (see %s)", p.cfg.Kind, p.cfg.Listen, readyTimeout, p.LogPath())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// tail is the end of the balancer's output, for an error.
func (p *Process) tail() string {
	var out []byte
	for _, name := range []string{p.LogPath(), filepath.Join(p.cfg.Dir, "error.log")} {
		b, _ := os.ReadFile(name)
		out = append(out, b...)
	}
	s := strings.TrimSpace(string(out))
	if len(s) > 600 {
		s = "..." + s[len(s)-600:]
	}
	return s
}

// Close stops the balancer: SIGTERM, then SIGKILL after a grace period,
// and waits for it to exit. Idempotent.
func (p *Process) Close() error {
	p.once.Do(func() {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(stopGrace):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
	})
	return nil
}

// Exited is closed once the balancer has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

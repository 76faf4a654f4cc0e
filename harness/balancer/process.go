package balancer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/chaosrun/chaosrun/internal/daemon"
)

// Binary returns the path of the kind's binary; a missing one is an error
// wrapping ErrMissing that names the Debian package.
func Binary(kind string) (string, error) {
	p, err := daemon.Find(kind, Package(kind))
	if err != nil {
		return "", fmt.Errorf("%s: %w", kind, err)
	}
	return p, nil
}

// Process is a running balancer. Close stops it; it is idempotent.
type Process struct {
	*daemon.Process
	cfg Config
}

// ConfigPath is the rendered configuration the balancer runs.
func (p *Process) ConfigPath() string { return configPath(p.cfg) }

// LogPath is where the balancer's own output goes.
func (p *Process) LogPath() string { return filepath.Join(p.cfg.Dir, p.cfg.Kind+".log") }

func configPath(c Config) string { return filepath.Join(c.Dir, c.FileName()) }

// Start renders c into c.Dir, starts the balancer on it and returns once it
// accepts connections. An empty c.Listen takes a free loopback port.
func Start(ctx context.Context, c Config) (*Process, error) {
	bin, err := Binary(c.Kind)
	if err != nil {
		return nil, err
	}
	// nginx resolves the paths it is given against its prefix (-p), so a
	// relative folder (chaosrun run --out results) would be doubled.
	if c.Dir, err = filepath.Abs(c.Dir); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "tmp"), 0o755); err != nil {
		return nil, fmt.Errorf("start %s: %w", c.Kind, err)
	}
	p := &Process{cfg: c}
	p.Process, err = daemon.Start(ctx, daemon.Spec{
		Name: c.Kind, Binary: bin, Listen: c.Listen, Log: p.LogPath(), Tail: []string{filepath.Join(c.Dir, "error.log")},
		Prepare: func(addr string) error {
			p.cfg.Listen = addr
			return renderFile(p.cfg)
		},
		Args:     func(string) []string { return args(p.cfg, configPath(p.cfg)) },
		Graceful: graceful(c.Kind),
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

func renderFile(c Config) error {
	f, err := os.Create(configPath(c))
	if err != nil {
		return fmt.Errorf("start %s: %w", c.Kind, err)
	}
	if err := Render(f, c); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// graceful is the kind's graceful shutdown signal: stop accepting, let the
// connections in progress finish (nginx's SIGQUIT, HAProxy's soft stop).
func graceful(kind string) syscall.Signal {
	if kind == HAProxy {
		return syscall.SIGUSR1
	}
	return syscall.SIGQUIT
}

func args(c Config, conf string) []string {
	if c.Kind == HAProxy {
		return []string{"-db", "-f", conf} // -db: in the foreground
	}
	return []string{"-p", c.Dir, "-e", filepath.Join(c.Dir, "error.log"), "-c", conf}
}

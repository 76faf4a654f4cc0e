// Package redisserver runs Debian's redis-server for one experiment: on a
// loopback port, in the foreground, with its data (an append-only file,
// fsync'd every write; no snapshots) in a folder of the experiment's state.
// The server replicas of an experiment with event_store: redis share their
// journal through it.
package redisserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/chaosrun/chaosrun/internal/daemon"
)

// Package is the Debian package holding redis-server.
const Package = "redis-server"

// Binary returns the path of redis-server; a missing one is an error
// wrapping daemon.ErrMissing that names the package.
func Binary() (string, error) { return daemon.Find("redis-server", Package) }

// Start starts redis-server with its data in dir and returns once it
// accepts connections; Addr says where.
func Start(ctx context.Context, dir string) (*daemon.Process, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	dir, err = filepath.Abs(dir) // its log and data wherever its working directory is
	if err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("start redis-server: %w", err)
	}
	return daemon.Start(ctx, daemon.Spec{
		Name: "redis-server", Binary: bin, Log: filepath.Join(dir, "redis-server.log"),
		Args: func(addr string) []string {
			host, port, _ := net.SplitHostPort(addr)
			return []string{"--bind", host, "--port", port, "--dir", dir, "--daemonize", "no",
				"--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", ""}
		},
	})
}

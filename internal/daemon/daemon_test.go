package daemon

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain lets this test binary serve as a daemon: run as "serve ADDR" it
// accepts connections there until killed, saying hello to each.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		ln, err := net.Listen("tcp", os.Args[2])
		if err != nil {
			fmt.Fprintln(os.Stderr, "listen:", err)
			os.Exit(2)
		}
		for {
			c, err := ln.Accept()
			if err != nil {
				os.Exit(1)
			}
			fmt.Fprintln(c, "hello")
			c.Close()
		}
	}
	os.Exit(m.Run())
}

func selfSpec(t *testing.T) Spec {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	return Spec{Name: "self", Binary: bin, Log: filepath.Join(t.TempDir(), "self.log"),
		Args: func(addr string) []string { return []string{"serve", addr} }}
}

func hello(t *testing.T, addr string) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err)
	defer c.Close()
	b := make([]byte, 6)
	_, err = c.Read(b)
	require.NoError(t, err)
	return string(b)
}

func TestStartRestartPauseClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	p, err := Start(ctx, selfSpec(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	assert.Equal(t, "hello\n", hello(t, p.Addr()), "ready means accepting")

	first := p.Exited()
	addr := p.Addr()
	require.NoError(t, p.Restart(ctx, false))
	<-first
	assert.Equal(t, addr, p.Addr(), "a restart keeps the address")
	assert.Equal(t, "hello\n", hello(t, p.Addr()))

	require.NoError(t, p.Pause(ctx))
	require.NoError(t, p.Resume(ctx))
	assert.Equal(t, "hello\n", hello(t, p.Addr()), "thawed")

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "idempotent")
	<-p.Exited()
	require.Error(t, p.Start(ctx), "closed for good")
}

func TestStartFailures(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want string
	}{
		{"exits before listening", Spec{Name: "sh", Binary: "/bin/sh",
			Args: func(string) []string { return []string{"-c", "echo no config here >&2; exit 3"} }},
			"start sh: it exited before listening on 127.0.0.1:"},
		{"no such binary", Spec{Name: "ghost", Binary: "/nonexistent/ghost", Args: func(string) []string { return nil }},
			"start ghost:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.spec.Log = filepath.Join(t.TempDir(), "log")
			_, err := Start(context.Background(), tt.spec)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			if strings.Contains(tt.name, "exits") {
				assert.Contains(t, err.Error(), "no config here", "the daemon's own words")
			}
		})
	}
	_, err := Find("no-such-daemon", "no-such-package")
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), "apt-get install no-such-package")
}

package balancer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// need skips the test when the kind's binary is absent, unless
// CHAOSRUN_REQUIRE_BALANCERS=1 (CI) makes that a failure.
func need(t *testing.T, kind string) {
	t.Helper()
	if _, err := Binary(kind); err != nil {
		if os.Getenv("CHAOSRUN_REQUIRE_BALANCERS") == "1" {
			t.Fatalf("CHAOSRUN_REQUIRE_BALANCERS=1: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
		not  []string
	}{
		{"nginx timeouts", Config{Kind: Nginx, Listen: "127.0.0.1:1", Upstreams: []string{"127.0.0.1:2", "127.0.0.1:3"},
			ProxyReadTimeout: 3 * time.Second, KeepaliveTimeout: 1500 * time.Millisecond, Dir: "/d"},
			[]string{"proxy_read_timeout 3000ms;", "keepalive_timeout 1500ms;", "proxy_buffering off;", "server 127.0.0.1:2;",
				"server 127.0.0.1:3;", "listen 127.0.0.1:1;", "pid /d/nginx.pid;"},
			[]string{"ip_hash", "hash $http"}},
		{"nginx default read timeout is nginx's", Config{Kind: Nginx, Listen: "x:1", Upstreams: []string{"u:1"}, ProxyBuffering: true},
			[]string{"proxy_buffering on;"}, []string{"proxy_read_timeout", "keepalive_timeout"}},
		{"nginx source", Config{Kind: Nginx, Listen: "x:1", Upstreams: []string{"u:1"}, Balance: Source}, []string{"ip_hash;"}, nil},
		{"nginx session", Config{Kind: Nginx, Listen: "x:1", Upstreams: []string{"u:1"}, Balance: SessionHeader},
			[]string{"hash $http_mcp_session_id consistent;"}, nil},
		{"haproxy timeouts", Config{Kind: HAProxy, Listen: "127.0.0.1:1", Upstreams: []string{"127.0.0.1:2", "127.0.0.1:3"},
			TimeoutServer: 3 * time.Second, TimeoutClient: 4 * time.Second, TimeoutTunnel: 5 * time.Second},
			[]string{"timeout server 3000ms", "timeout client 4000ms", "timeout tunnel 5000ms", "balance roundrobin",
				"server replica1 127.0.0.1:2 check", "server replica2 127.0.0.1:3 check", "bind 127.0.0.1:1",
				"retries 1", "option redispatch"}, nil},
		{"haproxy no tunnel", Config{Kind: HAProxy, Listen: "x:1", Upstreams: []string{"u:1"}, TimeoutServer: time.Second},
			[]string{"timeout server 1000ms"}, []string{"timeout tunnel", "timeout client"}},
		{"haproxy source", Config{Kind: HAProxy, Listen: "x:1", Upstreams: []string{"u:1"}, Balance: Source}, []string{"balance source"}, nil},
		{"haproxy session", Config{Kind: HAProxy, Listen: "x:1", Upstreams: []string{"u:1"}, Balance: SessionHeader},
			[]string{"balance hdr(Mcp-Session-Id)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, Render(&b, tt.cfg))
			for _, w := range tt.want {
				assert.Contains(t, b.String(), w)
			}
			for _, n := range tt.not {
				assert.NotContains(t, b.String(), n)
			}
		})
	}
	require.Error(t, Render(io.Discard, Config{Kind: "traefik", Upstreams: []string{"u:1"}}))
	require.Error(t, Render(io.Discard, Config{Kind: Nginx}), "no upstream")
}

func TestBinaryMissingNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := Binary("no-such-balancer")
	require.ErrorIs(t, err, ErrMissing)
	assert.Contains(t, err.Error(), "apt-get install no-such-balancer")
}

// stream is an upstream that answers with an event, then, every tick (never
// if 0), a comment, for total; it says on done whether it wrote to the end.
func stream(tick, total time.Duration, done chan<- bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Accel-Buffering", "no")
		fmt.Fprint(w, "id: 1\ndata: {}\n\n")
		w.(http.Flusher).Flush()
		end := time.After(total)
		var ticks <-chan time.Time
		if tick > 0 {
			tk := time.NewTicker(tick)
			defer tk.Stop()
			ticks = tk.C
		}
		for {
			select {
			case <-end:
				fmt.Fprint(w, "id: 2\ndata: {\"done\":true}\n\n")
				done <- true
				return
			case <-ticks:
				fmt.Fprint(w, ": keepalive\n\n")
				w.(http.Flusher).Flush()
			case <-r.Context().Done():
				done <- false
				return
			}
		}
	})
}

// TestIdleTimeoutClosesStream runs the real balancers: an upstream silent
// for longer than the balancer's idle timeout has its stream cut; comments
// more often than the timeout keep it alive to the end.
func TestIdleTimeoutClosesStream(t *testing.T) {
	const idle = 400 * time.Millisecond
	kinds := map[string]Config{
		Nginx:   {Kind: Nginx, ProxyReadTimeout: idle},
		HAProxy: {Kind: HAProxy, TimeoutServer: idle, TimeoutClient: 10 * time.Second},
	}
	tests := []struct {
		name     string
		tick     time.Duration
		complete bool
	}{
		{"silent stream is cut", 0, false},
		{"keepalive comments defeat the timeout", idle / 4, true},
	}
	for _, kind := range Kinds {
		for _, tt := range tests {
			t.Run(kind+"/"+tt.name, func(t *testing.T) {
				need(t, kind)
				done := make(chan bool, 1)
				up := httptest.NewServer(stream(tt.tick, 3*idle, done))
				t.Cleanup(up.Close)
				cfg := kinds[kind]
				cfg.Upstreams, cfg.Dir = []string{up.Listener.Addr().String()}, t.TempDir()
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				t.Cleanup(cancel)
				p, err := Start(ctx, cfg)
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				require.FileExists(t, filepath.Join(cfg.Dir, cfg.FileName()))

				res, err := http.Get("http://" + p.Addr() + "/mcp")
				require.NoError(t, err)
				defer res.Body.Close()
				require.Equal(t, http.StatusOK, res.StatusCode)
				body, err := io.ReadAll(bufio.NewReader(res.Body))
				if tt.complete {
					require.NoError(t, err)
					assert.Contains(t, string(body), `"done":true`)
					assert.True(t, <-done, "the upstream wrote to the end")
					return
				}
				require.Error(t, err, "the stream is cut before its end: %q", body)
				assert.True(t, errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(err.Error(), "reset"), "%v", err)
				assert.NotContains(t, string(body), `"done":true`)
				assert.False(t, <-done, "the balancer dropped the upstream's connection")
			})
		}
	}
}

func TestStartTakesARelativeFolder(t *testing.T) {
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			need(t, kind)
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up") }))
			t.Cleanup(up.Close)
			t.Chdir(t.TempDir())
			cfg := Config{Kind: kind, Upstreams: []string{up.Listener.Addr().String()}, Dir: filepath.Join("results", "run", "balancer"),
				ProxyReadTimeout: 10 * time.Second, TimeoutServer: 10 * time.Second, TimeoutClient: 10 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			t.Cleanup(cancel)
			p, err := Start(ctx, cfg)
			require.NoError(t, err, "chaosrun run --out with a relative folder")
			t.Cleanup(func() { _ = p.Close() })
			res, err := http.Get("http://" + p.Addr() + "/mcp")
			require.NoError(t, err)
			res.Body.Close()
			assert.Equal(t, http.StatusOK, res.StatusCode)
			assert.FileExists(t, filepath.Join(cfg.Dir, cfg.FileName()))
		})
	}
}

func TestStartFailsWithTheBalancersWords(t *testing.T) {
	need(t, Nginx)
	cfg := Config{Kind: Nginx, Upstreams: []string{"127.0.0.1:1"}, Dir: t.TempDir(), Listen: "256.0.0.1:1"}
	_, err := Start(context.Background(), cfg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exited before listening")
}

// TestGracefulStop stops each balancer gracefully while a stream runs
// through it. HAProxy's soft stop lets the stream end as the upstream ends
// it; nginx in single-process mode (master_process off) exits at once,
// cutting it. Either starts again on the same address.
func TestGracefulStop(t *testing.T) {
	tests := []struct {
		kind   string
		drains bool
	}{
		{Nginx, false},
		{HAProxy, true},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			need(t, tt.kind)
			done := make(chan bool, 1)
			up := httptest.NewServer(stream(100*time.Millisecond, 800*time.Millisecond, done))
			t.Cleanup(up.Close)
			cfg := Config{Kind: tt.kind, Upstreams: []string{up.Listener.Addr().String()}, Dir: t.TempDir(),
				ProxyReadTimeout: 10 * time.Second, TimeoutServer: 10 * time.Second, TimeoutClient: 10 * time.Second}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			t.Cleanup(cancel)
			p, err := Start(ctx, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			res, err := http.Get("http://" + p.Addr() + "/mcp")
			require.NoError(t, err)
			defer res.Body.Close()
			stopped := make(chan error, 1)
			go func() { stopped <- p.Stop(ctx, true) }()
			body, err := io.ReadAll(res.Body)
			if tt.drains {
				require.NoError(t, err, "the stream in progress is not cut")
				assert.Contains(t, string(body), `"done":true`)
			} else {
				require.Error(t, err, "the stream is cut")
			}
			require.NoError(t, <-stopped)
			addr := p.Addr()
			require.NoError(t, p.Start(ctx))
			assert.Equal(t, addr, p.Addr())
		})
	}
}

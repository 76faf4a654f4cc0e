package proxy_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/faults/toxics"
)

func startAgent(t *testing.T, ctx context.Context) *proxy.Agent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := proxy.Start(ctx, ln, proxy.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	return a
}

// silentBackend accepts connections and never writes to them.
func silentBackend(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestAgentServesToxiproxyWithOurToxics(t *testing.T) {
	a := startAgent(t, context.Background())
	client := toxiclient.NewClient(a.URL())
	p, err := client.CreateProxy("mcp", "127.0.0.1:0", silentBackend(t))
	require.NoError(t, err)
	host, port, err := net.SplitHostPort(p.Listen)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", host)
	require.NotEqual(t, "0", port, "the API reports the bound port")

	const idle = 50 * time.Millisecond
	_, err = p.AddToxic("idle", toxics.TypeIdleTimeout, "downstream", 1,
		toxiclient.Attributes{"idle": idle.Milliseconds()})
	require.NoError(t, err)

	conn, err := net.Dial("tcp", p.Listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	start := time.Now()
	require.NoError(t, conn.SetReadDeadline(start.Add(5*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "the idle timeout closes the silent connection")
	assert.GreaterOrEqual(t, time.Since(start), idle*3/4)
}

func TestAgentRejectsUnknownToxicType(t *testing.T) {
	a := startAgent(t, context.Background())
	client := toxiclient.NewClient(a.URL())
	p, err := client.CreateProxy("mcp", "127.0.0.1:0", silentBackend(t))
	require.NoError(t, err)
	_, err = p.AddToxic("x", "no_such_toxic", "downstream", 1, nil)
	require.ErrorContains(t, err, "invalid toxic type")
}

func TestAgentStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a := startAgent(t, ctx)
	client := toxiclient.NewClient(a.URL())
	p, err := client.CreateProxy("mcp", "127.0.0.1:0", silentBackend(t))
	require.NoError(t, err)

	cancel()
	require.NoError(t, a.Close(), "Close after the context ended reports the same clean shutdown")
	_, err = http.Get(a.URL() + "/version")
	require.Error(t, err, "the API no longer serves")
	_, err = net.Dial("tcp", p.Listen)
	require.Error(t, err, "the proxy no longer listens")
}

package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// observedProxy is an agent writing wire.jsonl, with an SSE backend behind
// a tap, a Toxiproxy proxy and another tap, as the runner builds it.
func observedProxy(t *testing.T) (a *Agent, c *Client, endpoint, wirePath string) {
	t.Helper()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":2,\"progress\":1,\"total\":1}}\n\n")
	}))
	t.Cleanup(backend.Close)
	wirePath = filepath.Join(t.TempDir(), wire.File)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err = Start(context.Background(), ln, Options{WirePath: wirePath})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	c = NewClient(a.URL())
	t.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	tapS, err := c.Tap(ctx, wire.EdgeServer, "127.0.0.1:0", strings.TrimPrefix(backend.URL, "http://"))
	require.NoError(t, err)
	p, err := toxiclient.NewClient(a.URL()).CreateProxy("mcp", "127.0.0.1:0", tapS)
	require.NoError(t, err)
	tapC, err := c.Tap(ctx, wire.EdgeClient, "127.0.0.1:0", p.Listen)
	require.NoError(t, err)
	return a, c, "http://" + tapC + "/mcp", wirePath
}

func TestTapsRecordBothEdgesAndDriveTriggers(t *testing.T) {
	a, c, endpoint, wirePath := observedProxy(t)
	ctx := context.Background()
	require.NoError(t, c.Arm(ctx, []trigger.Trigger{{ID: "sent", Event: trigger.EventRequest, Edge: wire.EdgeClient}}))

	resp, err := http.Get(endpoint)
	require.NoError(t, err)
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Contains(t, string(body), `"progress":1`, "the bytes pass the taps and the proxy unchanged")

	f, err := c.Fired(ctx, "sent")
	require.NoError(t, err)
	assert.Empty(t, f.Err)
	assert.NotZero(t, f.WireN, "a firing names the wire record that made it")

	_, err = c.Tap(ctx, wire.EdgeClient, "127.0.0.1:0", "127.0.0.1:1")
	require.ErrorContains(t, err, "the client edge has a tap already")

	require.NoError(t, a.Close())
	recs, err := wire.Load(wirePath)
	require.NoError(t, err)
	edges := map[wire.Edge]map[wire.Kind]int{wire.EdgeClient: {}, wire.EdgeServer: {}}
	for _, r := range recs {
		edges[r.Edge][r.Kind]++
	}
	for _, e := range wire.Edges {
		assert.Equal(t, 1, edges[e][wire.KindRequest], "%s edge", e)
		assert.Equal(t, 1, edges[e][wire.KindEvent], "%s edge", e)
	}
}

func TestTheClientTapRefusesAndAcceptsAgain(t *testing.T) {
	_, c, endpoint, _ := observedProxy(t)
	ctx := context.Background()
	addr := strings.TrimSuffix(strings.TrimPrefix(endpoint, "http://"), "/mcp")
	require.NoError(t, c.Refuse(ctx, wire.EdgeClient))
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "a refusing edge refuses, as a disabled proxy does")
	require.NoError(t, c.Accept(ctx, wire.EdgeClient))
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	require.NoError(t, err, "it listens again on the same address")
	conn.Close()
	require.ErrorContains(t, c.Refuse(ctx, "middle"), "no tap on the middle edge")
}

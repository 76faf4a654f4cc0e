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
	"github.com/chaosrun/chaosrun/wire"
)

// observedProxy is an agent writing wire.jsonl, with an SSE backend behind
// its observed Toxiproxy proxy, as the runner builds it.
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
	_, err = toxiclient.NewClient(a.URL()).CreateProxy("mcp", "127.0.0.1:0", strings.TrimPrefix(backend.URL, "http://"))
	require.NoError(t, err)
	addr, err := c.Observe(context.Background(), "mcp", "127.0.0.1:0")
	require.NoError(t, err)
	return a, c, "http://" + addr + "/mcp", wirePath
}

func TestObserverRecordsBothEdgesAndDrivesTriggers(t *testing.T) {
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

	_, err = c.Observe(ctx, "mcp", "127.0.0.1:0")
	require.ErrorContains(t, err, "the agent observes proxy mcp already")
	_, err = c.Observe(ctx, "nope", "127.0.0.1:0")
	require.ErrorContains(t, err, "proxy not found")

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

func TestTheClientEdgeRefusesAndAcceptsAgain(t *testing.T) {
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
	require.ErrorContains(t, c.Refuse(ctx, wire.EdgeServer), "no listener on the server edge")
}

// TestEndsThroughTheProxy: how each side ends a connection reaches the
// other through the observed proxy as through Toxiproxy alone (which
// closes both sockets when either direction ends: it passes no
// half-close), and each edge records who ended it and how. With a
// reset_peer installed, the proxy's closes are RSTs.
func TestEndsThroughTheProxy(t *testing.T) {
	const request = "GET /mcp HTTP/1.1\r\n\r\n"
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
	type closed struct {
		end wire.End
		by  wire.Side
	}
	cases := []struct {
		name   string
		linger bool // a reset_peer is installed
		// server runs the upstream side after it has read the request, and
		// returns the error that ended its reading, if it reads.
		server func(t *testing.T, c *net.TCPConn) error
		// client runs after the request was written.
		client    func(t *testing.T, c *net.TCPConn)
		got       string // what the client read
		clientErr error  // the error that ended its reading (net.ErrClosed: it reset and reads nothing)
		serverErr error
		atC, atS  closed
		downAtS   int64 // bytes from the server at the server edge
		downAtC   int64
	}{
		{
			name: "server reset",
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.WriteString(c, answer[:10])
				assert.NoError(t, err)
				time.Sleep(20 * time.Millisecond) // let the bytes pass before the reset
				lingerReset(t, c)
				return nil
			},
			got: answer[:10], clientErr: io.EOF,
			atC: closed{wire.EndFIN, wire.SideServer}, atS: closed{wire.EndRST, wire.SideServer}, downAtS: 10, downAtC: 10,
		},
		{
			name: "server fin",
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.WriteString(c, answer)
				assert.NoError(t, err)
				return nil
			},
			got: answer, clientErr: io.EOF,
			atC: closed{wire.EndFIN, wire.SideServer}, atS: closed{wire.EndFIN, wire.SideServer}, downAtS: int64(len(answer)), downAtC: int64(len(answer)),
		},
		{
			name: "server fin, closes are resets", linger: true,
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.WriteString(c, answer)
				assert.NoError(t, err)
				return nil
			},
			got: answer, clientErr: syscall.ECONNRESET,
			atC: closed{wire.EndRST, wire.SideServer}, atS: closed{wire.EndFIN, wire.SideServer}, downAtS: int64(len(answer)), downAtC: int64(len(answer)),
		},
		{
			name: "client half-close ends both",
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.ReadAll(c)
				return err
			},
			client:    func(t *testing.T, c *net.TCPConn) { require.NoError(t, c.CloseWrite()) },
			clientErr: io.EOF,
			atC:       closed{wire.EndFIN, wire.SideClient}, atS: closed{wire.EndFIN, wire.SideClient},
		},
		{
			name: "client reset",
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.ReadAll(c)
				return err
			},
			client:    func(t *testing.T, c *net.TCPConn) { lingerReset(t, c) },
			clientErr: net.ErrClosed,
			atC:       closed{wire.EndRST, wire.SideClient}, atS: closed{wire.EndFIN, wire.SideClient},
		},
		{
			name: "client reset, closes are resets", linger: true,
			server: func(t *testing.T, c *net.TCPConn) error {
				_, err := io.ReadAll(c)
				return err
			},
			client:    func(t *testing.T, c *net.TCPConn) { lingerReset(t, c) },
			clientErr: net.ErrClosed, serverErr: syscall.ECONNRESET,
			atC: closed{wire.EndRST, wire.SideClient}, atS: closed{wire.EndRST, wire.SideClient},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			served := make(chan error, 1)
			backend := serveOnce(t, func(c *net.TCPConn) {
				_, err := io.ReadFull(c, make([]byte, len(request)))
				assert.NoError(t, err)
				served <- tc.server(t, c)
			})
			a, endpoint, wirePath := observedTCP(t, backend)
			if tc.linger {
				p, err := toxiclient.NewClient(a.URL()).Proxy("mcp")
				require.NoError(t, err)
				_, err = p.AddToxic("linger", "reset_peer", "downstream", 0, toxiclient.Attributes{"timeout": 0})
				require.NoError(t, err)
			}
			conn, err := net.Dial("tcp", endpoint)
			require.NoError(t, err)
			c := conn.(*net.TCPConn)
			t.Cleanup(func() { c.Close() })
			_, err = io.WriteString(c, request)
			require.NoError(t, err)
			if tc.client != nil {
				tc.client(t, c)
			}
			if tc.clientErr != net.ErrClosed { // a client that reset has nothing to read
				require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
				got, err := readToEnd(c)
				assert.ErrorIs(t, err, tc.clientErr)
				assert.Equal(t, tc.got, string(got))
			}
			select {
			case err := <-served:
				assert.ErrorIs(t, err, tc.serverErr, "what the server's reading ended with")
			case <-time.After(5 * time.Second):
				t.Fatal("the server never finished")
			}

			closes := awaitCloses(t, wirePath, a)
			assert.Equal(t, tc.atC, closed{closes[wire.EdgeClient].End, closes[wire.EdgeClient].By}, "client edge: %+v", closes[wire.EdgeClient])
			assert.Equal(t, tc.atS, closed{closes[wire.EdgeServer].End, closes[wire.EdgeServer].By}, "server edge: %+v", closes[wire.EdgeServer])
			for _, e := range wire.Edges {
				assert.Equal(t, int64(len(request)), closes[e].BytesUp, "%s edge", e)
			}
			assert.Equal(t, tc.downAtC, closes[wire.EdgeClient].BytesDown)
			assert.Equal(t, tc.downAtS, closes[wire.EdgeServer].BytesDown)
		})
	}
}

// serveOnce runs handle for the first connection to a loopback listener
// and returns its address.
func serveOnce(t *testing.T, handle func(*net.TCPConn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		handle(c.(*net.TCPConn))
	}()
	return ln.Addr().String()
}

// observedTCP is an agent writing wire.jsonl, observing a Toxiproxy
// proxy in front of upstream; it returns the client edge's address.
func observedTCP(t *testing.T, upstream string) (*Agent, string, string) {
	t.Helper()
	wirePath := filepath.Join(t.TempDir(), wire.File)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := Start(context.Background(), ln, Options{WirePath: wirePath})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	_, err = toxiclient.NewClient(a.URL()).CreateProxy("mcp", "127.0.0.1:0", upstream)
	require.NoError(t, err)
	c := NewClient(a.URL())
	t.Cleanup(func() { _ = c.Close() })
	addr, err := c.Observe(context.Background(), "mcp", "127.0.0.1:0")
	require.NoError(t, err)
	return a, addr, wirePath
}

// awaitCloses waits until the one connection through agent a is closed at
// both edges, stops the agent and returns each edge's close record.
func awaitCloses(t *testing.T, wirePath string, a *Agent) map[wire.Edge]wire.Record {
	t.Helper()
	require.Eventually(t, func() bool {
		a.observers.mu.Lock()
		defer a.observers.mu.Unlock()
		return len(a.observers.tap.Conns()) == 0
	}, 5*time.Second, time.Millisecond, "the connection never closed at both edges")
	require.NoError(t, a.Close())
	recs, err := wire.Load(wirePath)
	require.NoError(t, err)
	out := map[wire.Edge]wire.Record{}
	for _, r := range recs {
		if r.Kind == wire.KindClose {
			require.NotContains(t, out, r.Edge, "one connection")
			out[r.Edge] = r
		}
	}
	require.Len(t, out, 2)
	return out
}

// lingerReset closes c with an RST.
func lingerReset(t *testing.T, c *net.TCPConn) {
	t.Helper()
	require.NoError(t, c.SetLinger(0))
	require.NoError(t, c.Close())
}

// readToEnd reads until an error, returning it (io.EOF included).
func readToEnd(c net.Conn) ([]byte, error) {
	var got []byte
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			return got, err
		}
	}
}

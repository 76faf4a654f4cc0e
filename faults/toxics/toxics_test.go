package toxics_test

import (
	"bufio"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/toxics"
)

// readUntilClosed reads conn until it ends and returns how many bytes came,
// when the last one came, and the error that ended the stream.
func readUntilClosed(t *testing.T, conn net.Conn) (int, time.Time, error) {
	t.Helper()
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	var (
		n    int
		last = time.Now()
		buf  = make([]byte, 64)
	)
	for {
		k, err := conn.Read(buf)
		if k > 0 {
			n += k
			t.Logf("%d bytes after %v", k, time.Since(last)) // explains a failure on a loaded machine
			last = time.Now()
		}
		if err != nil {
			return n, last, err
		}
	}
}

func TestIdleTimeoutClosesOnlyAfterIdle(t *testing.T) {
	const (
		idle  = 300 * time.Millisecond
		ticks = 16
		every = 25 * time.Millisecond // ticks*every exceeds idle; every leaves slack for a loaded machine
	)
	upstream := serveTCP(t, func(c net.Conn) {
		for range ticks {
			if _, err := c.Write([]byte{'x'}); err != nil {
				return
			}
			time.Sleep(every)
		}
		_, _ = io.Copy(io.Discard, c) // silent and open until the proxy closes
	})
	p := startProxy(t, upstream)
	addToxic(t, p, "idle", toxics.TypeIdleTimeout, "downstream", 1, map[string]any{"idle": idle.Milliseconds()})

	conn, err := net.Dial("tcp", p.Listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	n, last, err := readUntilClosed(t, conn)
	closed := time.Now()

	require.ErrorIs(t, err, io.EOF)
	assert.Equal(t, ticks, n, "the toxic must not close the connection while bytes flow")
	assert.GreaterOrEqual(t, closed.Sub(last), idle*3/4, "closed before the stream was idle for long enough")
	assert.Less(t, closed.Sub(last), idle+time.Second)
}

func TestIdleTimeoutCloseAsSeenByGoHTTPClient(t *testing.T) {
	const idle = 100 * time.Millisecond
	cases := []struct {
		name   string
		marker string // when a zero-toxicity reset_peer is installed: "", "before" or "after" the stream opens
		want   error
	}{
		{name: "fin", want: io.ErrUnexpectedEOF},
		{name: "reset_peer before the connection makes it an RST", marker: "before", want: syscall.ECONNRESET},
		{name: "reset_peer after the connection opened leaves a FIN", marker: "after", want: io.ErrUnexpectedEOF},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			backend := sseBackend(t)
			p := startProxy(t, backend.Listener.Addr().String())
			linger := func() {
				addToxic(t, p, "linger", toxics.ResetPeer, "downstream", 0, map[string]any{"timeout": 0})
			}
			if tc.marker == "before" {
				linger()
			}
			client := &http.Client{Transport: &http.Transport{}}
			resp, err := client.Get("http://" + p.Listen + "/mcp")
			require.NoError(t, err)
			t.Cleanup(func() { resp.Body.Close() })
			body := bufio.NewReader(resp.Body)
			line, err := body.ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "data: 1\n", line)
			if tc.marker == "after" {
				linger()
			}
			// Installed once the stream is open, so a slow first byte
			// cannot trip it early; its timer starts now.
			addToxic(t, p, "idle", toxics.TypeIdleTimeout, "downstream", 1, map[string]any{"idle": idle.Milliseconds()})
			_, err = io.ReadAll(body)
			require.Error(t, err)
			t.Logf("the body read ends with: %v", err)
			assert.True(t, errors.Is(err, tc.want), "got %v, want %v", err, tc.want)
		})
	}
}

// sseBackend serves one SSE event on every GET and then holds the stream
// open until the client goes away.
func sseBackend(t *testing.T) *httptest.Server {
	t.Helper()
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: 1\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) })
	return srv
}

func TestCutClosesSilentConnections(t *testing.T) {
	const after = 60 * time.Millisecond
	for _, opened := range []string{"before", "after"} {
		t.Run("connection opened "+opened+" the toxic", func(t *testing.T) {
			upstream := serveTCP(t, func(c net.Conn) { _, _ = io.Copy(io.Discard, c) })
			p := startProxy(t, upstream)
			var conn net.Conn
			dial := func() {
				var err error
				conn, err = net.Dial("tcp", p.Listen)
				require.NoError(t, err)
				t.Cleanup(func() { conn.Close() })
				_, err = conn.Write([]byte("hello")) // the proxy has accepted it once bytes pass
				require.NoError(t, err)
			}
			if opened == "before" {
				dial()
			}
			start := time.Now()
			addToxic(t, p, "cut", toxics.TypeCut, "downstream", 1, map[string]any{"after": after.Milliseconds()})
			if opened == "after" {
				dial()
			}
			n, _, err := readUntilClosed(t, conn)
			require.ErrorIs(t, err, io.EOF)
			assert.Zero(t, n)
			assert.GreaterOrEqual(t, time.Since(start), after*3/4)
		})
	}
}

func TestStallHealsWithoutLoss(t *testing.T) {
	for _, stream := range []string{"upstream", "downstream"} {
		t.Run(stream, func(t *testing.T) {
			upstream := serveTCP(t, func(c net.Conn) { _, _ = io.Copy(c, c) }) // echo
			p := startProxy(t, upstream)
			conn, err := net.Dial("tcp", p.Listen)
			require.NoError(t, err)
			t.Cleanup(func() { conn.Close() })
			addToxic(t, p, "stall", toxics.TypeStall, stream, 1, nil)

			payload := make([]byte, 1<<20)
			_, _ = rand.Read(payload)
			wrote := make(chan error, 1)
			go func() {
				_, err := conn.Write(payload)
				wrote <- err
			}()
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(100*time.Millisecond)))
			n, err := conn.Read(make([]byte, 1))
			require.Zero(t, n, "a byte passed the stall")
			var ne net.Error
			require.True(t, errors.As(err, &ne) && ne.Timeout(), "want a read timeout while stalled, got %v", err)

			removeToxic(t, p, "stall")
			require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
			got := make([]byte, len(payload))
			_, err = io.ReadFull(conn, got)
			require.NoError(t, err)
			require.NoError(t, <-wrote)
			require.Equal(t, payload, got, "every byte, in order, after the heal")
		})
	}
}

func TestHTTPStatusAnswersWithoutReachingServer(t *testing.T) {
	cases := []struct {
		name     string
		count    int
		requests int
		answered int
		linger   bool // a zero-toxicity reset_peer makes every close an RST
	}{
		{name: "count 2 answers two requests", count: 2, requests: 4, answered: 2},
		{name: "count 0 answers every request", count: 0, requests: 3, answered: 3},
		{name: "the answer survives an RST close", count: 1, requests: 2, answered: 1, linger: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int64
			backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				_, _ = io.WriteString(w, "ok")
			}))
			t.Cleanup(backend.Close)
			p := startProxy(t, backend.Listener.Addr().String())
			if tc.linger {
				addToxic(t, p, "linger", toxics.ResetPeer, "downstream", 0, map[string]any{"timeout": 0})
			}
			addToxic(t, p, "answer", toxics.TypeHTTPStatus, "downstream", 1, map[string]any{"status": 503})
			addToxic(t, p, "gate", toxics.TypeHTTPStatusGate, "upstream", 1, map[string]any{"count": tc.count})

			client := &http.Client{Transport: &http.Transport{}}
			t.Cleanup(client.CloseIdleConnections)
			for i := range tc.requests {
				resp, err := client.Post("http://"+p.Listen+"/mcp", "application/json",
					strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`))
				require.NoError(t, err, "request %d", i)
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				require.NoError(t, err)
				if i < tc.answered {
					assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "request %d", i)
					assert.JSONEq(t, `{"error":"service_unavailable","status":503}`, string(body))
					assert.True(t, resp.Close, "the answer closes the connection")
				} else {
					assert.Equal(t, http.StatusOK, resp.StatusCode, "request %d", i)
				}
			}
			assert.Equal(t, int64(tc.requests-tc.answered), hits.Load(), "answered requests must not reach the server")
		})
	}
}

func TestIsRequestLine(t *testing.T) {
	cases := []struct {
		in   string
		want bool
	}{
		{"POST /mcp HTTP/1.1\r\n", true},
		{"GET / HTTP/1.1\r\n", true},
		{"DELETE /mcp HTTP/1.1\r\nMcp-Session-Id: x\r\n", true},
		{"GET", false},
		{"GET ", false},
		{"GET  / HTTP/1.1", false},
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", false},
		{"\x16\x03\x01\x02\x00", false}, // TLS ClientHello
		{"get / HTTP/1.1", false},
		{"", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, toxics.IsRequestLine([]byte(tc.in)), "%q", tc.in)
	}
}

func TestStatusResponseParses(t *testing.T) {
	for _, status := range []int{429, 502, 503, 504, 599} {
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(toxics.StatusResponse(status)))), nil)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		assert.Equal(t, status, resp.StatusCode)
		assert.True(t, resp.Close)
		assert.Contains(t, string(body), `"status":`)
	}
}

func FuzzIsRequestLine(f *testing.F) {
	f.Add([]byte("POST /mcp HTTP/1.1\r\n"))
	f.Add([]byte("PRI * HTTP/2.0"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if !toxics.IsRequestLine(b) {
			return
		}
		method, target, ok := strings.Cut(string(b), " ")
		if !ok || method == "" || target == "" || strings.ContainsAny(target[:1], " \r\n") {
			t.Fatalf("%q accepted as a request line", b)
		}
	})
}

func FuzzStatusResponse(f *testing.F) {
	f.Add(503)
	f.Add(100)
	f.Add(999)
	f.Fuzz(func(t *testing.T, status int) {
		if status < 100 || status > 999 {
			return
		}
		resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(string(toxics.StatusResponse(status)))), nil)
		if err != nil {
			t.Fatalf("status %d: %v", status, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != status || int64(len(body)) != resp.ContentLength {
			t.Fatalf("status %d: got %d, body %q, err %v", status, resp.StatusCode, body, err)
		}
	})
}

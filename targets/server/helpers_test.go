package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// testTimeout bounds every request a test makes, so a broken server fails
// the test instead of hanging it.
const testTimeout = 10 * time.Second

// client talks to test servers without any proxy from the environment.
var client = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64}}

// tserver is a Server on 127.0.0.1:0.
type tserver struct {
	*Server
	base   string
	ledger *sideeffects.Memory
}

// startServer serves cfg on a loopback port. Unless cfg.Recorder is set,
// the ledger is an in-memory one the test can read.
func startServer(t testing.TB, cfg Config) *tserver {
	t.Helper()
	return startServerAt(t, cfg, "127.0.0.1:0")
}

// startServerAt serves cfg on addr, e.g. the address of a server that was
// just stopped, as a restart in place would.
func startServerAt(t testing.TB, cfg Config, addr string) *tserver {
	t.Helper()
	mem := sideeffects.NewMemory()
	if cfg.Recorder == nil {
		cfg.Recorder = mem
	}
	srv, err := New(cfg)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", addr)
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		_ = srv.Close()
		require.NoError(t, <-served)
	})
	return &tserver{Server: srv, base: "http://" + ln.Addr().String(), ledger: mem}
}

// headers are the headers of a well-behaved client on session sid.
func headers(sid, version string) http.Header {
	h := http.Header{}
	h.Set("Content-Type", mcp.ContentTypeJSON)
	h.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		h.Set(mcp.HeaderSessionID, sid)
	}
	if version != "" {
		h.Set(mcp.HeaderProtocolVersion, version)
	}
	return h
}

// do sends one request to path (default /mcp) and closes the response body
// at cleanup.
func (ts *tserver) do(t testing.TB, ctx context.Context, method, path string, h http.Header, body string) *http.Response {
	t.Helper()
	if path == "" {
		path = "/mcp"
	}
	req, err := http.NewRequestWithContext(ctx, method, ts.base+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	resp, err := client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

func requestBody(t testing.TB, id int, method string, params any) string {
	t.Helper()
	m, err := mcp.NewRequest(int64(id), method, params)
	require.NoError(t, err)
	b, err := json.Marshal(m)
	require.NoError(t, err)
	return string(b)
}

func initBody(t testing.TB, version, client string) string {
	return requestBody(t, 1, mcp.MethodInitialize, map[string]any{
		"protocolVersion": version, "capabilities": map[string]any{},
		"clientInfo": mcp.Implementation{Name: client, Version: "1"},
	})
}

// initialize opens a session and returns its id and negotiated version.
func (ts *tserver) initialize(t testing.TB, version string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp := ts.do(t, ctx, http.MethodPost, "", headers("", ""), initBody(t, version, "client-1"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	sid := resp.Header.Get(mcp.HeaderSessionID)
	require.Len(t, sid, 32)
	var res mcp.InitializeResult
	require.NoError(t, json.Unmarshal(resultOf(t, resp).Result, &res))
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	ack := ts.do(t, ctx, http.MethodPost, "", headers(sid, res.ProtocolVersion), note)
	require.Equal(t, http.StatusAccepted, ack.StatusCode)
	return sid, res.ProtocolVersion
}

// resultOf reads an SSE or JSON response until its (single) response message.
func resultOf(t testing.TB, resp *http.Response) mcp.Message {
	t.Helper()
	if strings.HasPrefix(resp.Header.Get("Content-Type"), mcp.ContentTypeJSON) {
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		m, err := mcp.ParseMessage(b)
		require.NoError(t, err, "body %s", b)
		return m
	}
	for _, ev := range readAll(t, resp) {
		if len(ev.Data) == 0 {
			continue
		}
		if m := decode(t, ev.Data); m.IsResponse() {
			return m
		}
	}
	t.Fatal("the stream ended without a response")
	return mcp.Message{}
}

func decode(t testing.TB, data []byte) mcp.Message {
	t.Helper()
	m, err := mcp.ParseMessage(data)
	require.NoError(t, err, "event data %s", data)
	return m
}

// readAll reads SSE events until the server ends the stream cleanly.
func readAll(t testing.TB, resp *http.Response) []mcp.Event {
	t.Helper()
	var out []mcp.Event
	r := mcp.NewEventReader(resp.Body)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out = append(out, ev)
	}
}

// stream is an SSE response the test reads event by event and can cut.
type stream struct {
	resp   *http.Response
	r      *mcp.EventReader
	cancel context.CancelFunc
}

// open sends a request whose answer is an SSE stream.
func (ts *tserver) open(t testing.TB, method string, h http.Header, body string) *stream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	resp := ts.do(t, ctx, method, "", h, body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, mcp.ContentTypeSSE, resp.Header.Get("Content-Type"))
	return &stream{resp: resp, r: mcp.NewEventReader(resp.Body), cancel: cancel}
}

// call starts tools/call and returns its SSE stream.
func (ts *tserver) call(t testing.TB, sid, version string, id int, tool string, args any) *stream {
	t.Helper()
	return ts.open(t, http.MethodPost, headers(sid, version), requestBody(t, id, mcp.MethodToolsCall,
		map[string]any{"name": tool, "arguments": args, "_meta": map[string]any{"progressToken": "tok-" + strconv.Itoa(id)}}))
}

// resume opens a GET with Last-Event-ID.
func (ts *tserver) resume(t testing.TB, sid, version string, last int64) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	h := headers(sid, version)
	h.Del("Content-Type")
	h.Set("Accept", mcp.ContentTypeSSE)
	h.Set(mcp.HeaderLastEventID, strconv.FormatInt(last, 10))
	return ts.do(t, ctx, http.MethodGet, "", h, "")
}

func (s *stream) next(t testing.TB) mcp.Event {
	t.Helper()
	ev, err := s.r.Next()
	require.NoError(t, err)
	return ev
}

func (s *stream) rest(t testing.TB) []mcp.Event {
	t.Helper()
	return readAll(t, s.resp)
}

// cut closes the connection from the client's side.
func (s *stream) cut() {
	s.cancel()
	_ = s.resp.Body.Close()
}

func eventID(t testing.TB, ev mcp.Event) int64 {
	t.Helper()
	id, err := strconv.ParseInt(ev.ID, 10, 64)
	require.NoError(t, err, "event id %q", ev.ID)
	return id
}

// records returns the ledger records of kind k that match keep (nil: all).
func (ts *tserver) records(k sideeffects.Kind, keep func(sideeffects.Record) bool) []sideeffects.Record {
	var out []sideeffects.Record
	for _, r := range ts.ledger.Records() {
		if r.Kind == k && (keep == nil || keep(r)) {
			out = append(out, r)
		}
	}
	return out
}

// waitRecord waits until the ledger holds a record of kind k matching keep.
func (ts *tserver) waitRecord(t testing.TB, k sideeffects.Kind, keep func(sideeffects.Record) bool) sideeffects.Record {
	t.Helper()
	var got sideeffects.Record
	require.Eventually(t, func() bool {
		rs := ts.records(k, keep)
		if len(rs) == 0 {
			return false
		}
		got = rs[0]
		return true
	}, testTimeout, time.Millisecond, "no %s record", k)
	return got
}

func forRequest(id string) func(sideeffects.Record) bool {
	return func(r sideeffects.Record) bool { return r.RequestID == id }
}

// toolResult decodes a tools/call response.
func toolResult(t testing.TB, m mcp.Message) (mcp.CallResult, map[string]any) {
	t.Helper()
	require.Nil(t, m.Error, "tools/call failed: %+v", m.Error)
	var res mcp.CallResult
	require.NoError(t, json.Unmarshal(m.Result, &res))
	var sc map[string]any
	require.NoError(t, json.Unmarshal(res.StructuredContent, &sc))
	return res, sc
}

// discard is a Recorder that keeps nothing, for benchmarks and fuzzing.
type discard struct{}

func (discard) Record(context.Context, sideeffects.Record) error { return nil }

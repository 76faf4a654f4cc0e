package mcpgo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

func startServer(t *testing.T, cfg ServerConfig) (*Server, *sideeffects.Memory, string) {
	t.Helper()
	l := newLedger()
	cfg.Recorder = l
	s, err := NewServer(cfg)
	require.NoError(t, err)
	url := serve(t, s.Handler())
	// Registered after serve, so it runs first: closing the sessions ends
	// the hanging SSE requests the HTTP server's Close waits for.
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s, l, url
}

func kinds(recs []sideeffects.Record) map[sideeffects.Kind]int {
	out := map[sideeffects.Kind]int{}
	for _, r := range recs {
		out[r.Kind]++
	}
	return out
}

// connectPlain connects a plain go-sdk client. Its standalone GET stream
// is off: mcp-go would split the progress of a call between that stream
// and the call's own (see TestMCPGoServerSplitsProgress_CurrentBehaviour).
func connectPlain(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.Version20251125})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestSDKVersionIsThePinnedOne(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*github.com/mark3labs/mcp-go `+regexp.QuoteMeta(SDKVersion)+`(\s|$)`, string(gomod))
}

func TestServerWithPlainGoSDKClient(t *testing.T) {
	s, l, url := startServer(t, ServerConfig{})
	var mu sync.Mutex
	var progress []float64
	cs := connectPlain(t, url, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			progress = append(progress, req.Params.Progress)
			mu.Unlock()
		},
	})
	ctx := context.Background()
	chatty := &mcp.CallToolParams{Name: mcpwire.ToolChatty, Arguments: map[string]any{"events": 3, "interval_ms": 1}}
	chatty.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, chatty)
	require.NoError(t, err)
	require.False(t, res.IsError)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpwire.ToolCharge,
		Arguments: map[string]any{"order_id": "o-1", "amount_cents": 4999, "duration_ms": 5}})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	sid := cs.ID()
	require.NoError(t, cs.Close())
	require.NoError(t, s.Close())

	mu.Lock()
	assert.Equal(t, []float64{1, 2, 3}, progress)
	mu.Unlock()
	recs := l.Records()
	assert.Equal(t, map[sideeffects.Kind]int{
		sideeffects.KindSessionOpened: 1, sideeffects.KindCallStarted: 2, sideeffects.KindEventEmitted: 3,
		sideeffects.KindCallFinished: 2, sideeffects.KindResultWritten: 2, sideeffects.KindCharge: 1,
		sideeffects.KindSessionClosed: 1,
	}, kinds(recs))
	for i, r := range recs {
		assert.Equal(t, sid, r.Session, "%+v", r)
		assert.Equal(t, Target, r.Source)
		switch r.Kind {
		case sideeffects.KindSessionOpened:
			assert.Equal(t, "alice", r.Client)
			assert.Equal(t, mcpwire.Version20251125, r.Detail)
		case sideeffects.KindSessionClosed:
			assert.Equal(t, "deleted", r.Reason)
		case sideeffects.KindCharge:
			assert.Equal(t, "o-1", r.OrderID)
			assert.EqualValues(t, 4999, r.AmountCents)
			assert.Equal(t, "alice", r.Client)
		case sideeffects.KindEventEmitted:
			assert.EqualValues(t, i-1, r.Seq, "seq 1..3 right after call_started")
		case sideeffects.KindCallFinished:
			assert.False(t, r.IsError)
			assert.Empty(t, r.Detail, "the request context lived through the call")
		}
		if r.Kind != sideeffects.KindSessionOpened && r.Kind != sideeffects.KindSessionClosed {
			assert.NotEmpty(t, r.RequestID, "%+v", r)
		}
	}
}

func TestServerIdempotencyKey(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{})
	cs := connectPlain(t, url, nil)
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpwire.ToolCharge,
			Arguments: map[string]any{"order_id": "o-1", "amount_cents": 10, "idempotency_key": "k"}})
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, 1, l.Count(sideeffects.KindChargeDeduplicated))
}

func TestServerRejectsBadArguments(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{})
	cs := connectPlain(t, url, nil)
	tests := []struct {
		tool string
		args map[string]any
	}{
		{mcpwire.ToolCharge, map[string]any{"amount_cents": 1}},
		{mcpwire.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 0}},
		{mcpwire.ToolChatty, map[string]any{"events": -1}},
		{mcpwire.ToolChatty, map[string]any{"events": "many"}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprint(tc.args), func(t *testing.T) {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			require.NoError(t, err)
			assert.True(t, res.IsError)
			sc, _ := res.StructuredContent.(map[string]any)
			assert.Equal(t, "invalid_arguments", sc["error"])
		})
	}
	n := len(tests)
	assert.Equal(t, map[sideeffects.Kind]int{sideeffects.KindSessionOpened: 1, sideeffects.KindCallStarted: n,
		sideeffects.KindResultWritten: n, sideeffects.KindCallFinished: n}, kinds(l.Records()),
		"a refused call is still a call, and nothing is charged or emitted")
	for _, r := range l.Of(sideeffects.KindCallFinished) {
		assert.True(t, r.IsError)
		assert.Equal(t, "invalid_arguments", r.Reason)
	}
}

func TestNewServerRejectsNegativeSettings(t *testing.T) {
	for _, cfg := range []ServerConfig{{RetentionEvents: -1}, {SessionTTL: -1}, {DefaultChargeDuration: -1}} {
		_, err := NewServer(cfg)
		assert.Error(t, err)
	}
}

func TestServerControl(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{})
	r := rawConnect(t, url+"/mcp")
	control := func(method, path string) (int, map[string]any) {
		req, err := http.NewRequest(method, url+path, nil)
		require.NoError(t, err)
		resp := r.do(req)
		var out map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		return resp.StatusCode, out
	}
	tests := []struct {
		method, path string
		status       int
		field        string
		value        any
	}{
		{http.MethodGet, "/control/healthz", http.StatusOK, "ok", true},
		{http.MethodGet, "/control/status", http.StatusOK, "sdk_version", SDKVersion},
		{http.MethodPost, "/control/terminate?session=" + r.session, http.StatusNotImplemented, "message", terminateUnsupported},
		{http.MethodPost, "/control/expire?session=nope", http.StatusNotFound, "error", "session_not_found"},
		{http.MethodPost, "/control/expire", http.StatusOK, "sessions", []any{r.session}},
	}
	for _, tc := range tests {
		code, out := control(tc.method, tc.path)
		assert.Equal(t, tc.status, code, tc.path)
		assert.Equal(t, tc.value, out[tc.field], tc.path)
	}
	closed := l.Of(sideeffects.KindSessionClosed)
	require.Len(t, closed, 1, "mcp-go unregisters the session within the DELETE")
	assert.Equal(t, "expired", closed[0].Reason)
}

func TestServerCloseEndsRunningTools(t *testing.T) {
	s, l, url := startServer(t, ServerConfig{DefaultChargeDuration: time.Hour})
	r := rawConnect(t, url+"/mcp")
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	go func() {
		req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","arguments":{"order_id":"o","amount_cents":1}}}`)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	await(t, started, "the charge to start")
	finished := l.Next(kindIs(sideeffects.KindCallFinished))
	require.NoError(t, s.Close())
	await(t, finished, "the charge to end")
	assert.Zero(t, l.Count(sideeffects.KindCharge))
	f := l.Of(sideeffects.KindCallFinished)[0]
	assert.True(t, f.IsError)
	assert.Equal(t, "shutdown", f.Reason)
	assert.Equal(t, "shutdown", l.Of(sideeffects.KindSessionClosed)[0].Reason)
}

// TestMCPGoServerEvictedLastEventID_CurrentBehaviour resumes a chatty
// stream past the retention bound. mcp-go answers 400 "Unknown
// Last-Event-ID" in plain text (its stores cannot tell an evicted id from
// one never issued). A resume from the stream's last event gets 200 and an
// empty stream.
func TestMCPGoServerEvictedLastEventID_CurrentBehaviour(t *testing.T) {
	_, _, url := startServer(t, ServerConfig{RetentionEvents: 5})
	r := rawConnect(t, url+"/mcp")
	resp := r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",` +
		`"arguments":{"events":30},"_meta":{"progressToken":"t"}}}`)
	evs := sse(t, resp)
	require.Len(t, evs, 31, "30 progress notifications and the result, no priming event")
	for _, ev := range evs {
		require.NotEmpty(t, ev.ID, "every event has an id")
	}

	evicted := r.resume(evs[0].ID)
	assert.Equal(t, http.StatusBadRequest, evicted.StatusCode)
	assert.Equal(t, "Unknown Last-Event-ID\n", body(t, evicted))

	head := r.resume(evs[len(evs)-1].ID)
	assert.Equal(t, http.StatusOK, head.StatusCode)
	assert.Empty(t, sse(t, head))

	retained := r.resume(evs[len(evs)-3].ID)
	assert.Equal(t, http.StatusOK, retained.StatusCode)
	assert.Len(t, sse(t, retained), 2, "the last progress notification and the result")
}

// TestMCPGoServerSessionAnswers_CurrentBehaviour shows what mcp-go answers
// once a session is gone: 404 to a POST, 400 to a resume (its events were
// purged with it), and 200 to a GET without Last-Event-ID, which opens a
// fresh listening stream under the dead session's id.
func TestMCPGoServerSessionAnswers_CurrentBehaviour(t *testing.T) {
	_, _, url := startServer(t, ServerConfig{})
	r := rawConnect(t, url+"/mcp")
	evs := sse(t, r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",`+
		`"arguments":{"events":1},"_meta":{"progressToken":"t"}}}`))
	require.Len(t, evs, 2)
	resp, err := http.Post(url+"/control/expire?session="+r.session, "", nil)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	assert.Equal(t, http.StatusNotFound, r.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`).StatusCode)
	assert.Equal(t, http.StatusBadRequest, r.resume(evs[0].ID).StatusCode)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := r.request(http.MethodGet, "").WithContext(ctx)
	got := r.do(listen)
	assert.Equal(t, http.StatusOK, got.StatusCode)
	assert.Equal(t, mcpwire.ContentTypeSSE, got.Header.Get("Content-Type"))
}

// TestMCPGoServerSplitsProgress_CurrentBehaviour opens the standalone GET
// stream, as the go-sdk client does, and runs a chatty call. mcp-go reads
// a session's notifications from one channel into both the call's stream
// and the standalone stream, so the call's progress is split between
// them (in any proportion, all of it on either side included), with no
// fault at all. A client that stops reading the standalone stream loses
// what went there.
func TestMCPGoServerSplitsProgress_CurrentBehaviour(t *testing.T) {
	_, _, url := startServer(t, ServerConfig{})
	r := rawConnect(t, url+"/mcp")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	listen := r.do(r.request(http.MethodGet, "").WithContext(ctx))
	require.Equal(t, http.StatusOK, listen.StatusCode)
	onListen := make(chan int64, 100)
	go func() {
		er := mcpwire.NewEventReader(listen.Body)
		for {
			ev, err := er.Next()
			if err != nil {
				return
			}
			onListen <- progressOf(ev)
		}
	}()
	const n = 40
	onCall := 0
	for _, ev := range sse(t, r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",`+
		fmt.Sprintf(`"arguments":{"events":%d},"_meta":{"progressToken":"t"}}}`, n))) {
		if progressOf(ev) > 0 {
			onCall++
		}
	}
	assert.Less(t, onCall, n, "some of the call's progress went to the standalone stream")
	for range n - onCall {
		select {
		case seq := <-onListen:
			assert.Positive(t, seq)
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d events on the call's stream, and fewer on the standalone one", onCall, n)
		}
	}
}

func progressOf(ev mcpwire.Event) int64 {
	var m struct {
		Method string                 `json:"method"`
		Params mcpwire.ProgressParams `json:"params"`
	}
	if json.Unmarshal(ev.Data, &m) != nil || m.Method != mcpwire.MethodProgress {
		return 0
	}
	return int64(m.Params.Progress)
}

// TestMCPGoServerExpireDuringCall_CurrentBehaviour expires a session (the
// SDK's own DELETE path, as its idle sweeper takes) while a charge runs.
// mcp-go forgets the session at once (404 for new requests) but the call
// goes on, and its result still reaches the client on the call's open
// POST.
func TestMCPGoServerExpireDuringCall_CurrentBehaviour(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{})
	r := rawConnect(t, url+"/mcp")
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	answered := make(chan string, 1)
	go func() {
		req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge",`+
			`"arguments":{"order_id":"o","amount_cents":1,"duration_ms":200}}}`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answered <- err.Error()
			return
		}
		defer resp.Body.Close()
		answered <- body(t, resp)
	}()
	await(t, started, "the charge to start")
	resp, err := http.Post(url+"/control/expire?session="+r.session, "", nil)
	require.NoError(t, err)
	resp.Body.Close()

	assert.Equal(t, 1, l.Count(sideeffects.KindSessionClosed), "closed before the call ends")
	assert.Equal(t, http.StatusNotFound, r.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`).StatusCode)
	assert.Contains(t, <-answered, `"structuredContent":{"charged":true,"order_id":"o","amount_cents":1}`)
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
}

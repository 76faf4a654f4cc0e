package gosdk

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

func connectPlain(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp"},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.Version20251125})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestSDKVersionIsThePinnedOne(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\s*github.com/modelcontextprotocol/go-sdk `+regexp.QuoteMeta(SDKVersion)+`(\s|$)`, string(gomod))
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
			assert.Zero(t, r.EventID)
		case sideeffects.KindCallFinished:
			assert.False(t, r.IsError)
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
		{mcpwire.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": -1}},
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
	closed := l.Next(kindIs(sideeffects.KindSessionClosed))
	if l.Count(sideeffects.KindSessionClosed) == 0 {
		await(t, closed, "the session to close")
	}
	assert.Equal(t, "expired", l.Of(sideeffects.KindSessionClosed)[0].Reason)
	resp := r.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestServerStatusCountsInflightCalls(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{DefaultChargeDuration: time.Hour})
	r := rawConnect(t, url+"/mcp")
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	go func() {
		req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","arguments":{"order_id":"o","amount_cents":1}}}`)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	await(t, started, "the charge to start")
	resp, err := http.Get(url + "/control/status")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Equal(t, 1.0, st["inflight_calls"])
	assert.Equal(t, 1.0, st["sessions"])
}

// TestServerCloseEndsRunningTools checks that Close does not wait out a
// long charge: the tool ends with an error result and no charge.
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
	require.NoError(t, s.Close())
	assert.Zero(t, l.Count(sideeffects.KindCharge))
	finished := l.Of(sideeffects.KindCallFinished)
	require.Len(t, finished, 1)
	assert.True(t, finished[0].IsError)
	assert.Equal(t, "shutdown", finished[0].Reason)
	assert.Equal(t, "shutdown", l.Of(sideeffects.KindSessionClosed)[0].Reason)
}

// TestGoSDKServerEvictedLastEventID_CurrentBehaviour resumes a chatty
// stream whose first events the byte-bounded MemoryEventStore dropped.
// go-sdk answers 400 with a plain-text body, the same answer as for any
// bad request, so a client cannot tell eviction from its own mistake. A
// resume from the stream's last event gets 200 and an empty stream.
func TestGoSDKServerEvictedLastEventID_CurrentBehaviour(t *testing.T) {
	_, _, url := startServer(t, ServerConfig{RetentionEvents: 5})
	r := rawConnect(t, url+"/mcp")
	resp := r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",` +
		`"arguments":{"events":30},"_meta":{"progressToken":"t"}}}`)
	evs := sse(t, resp)
	require.Len(t, evs, 32, "priming event, 30 progress notifications, result")
	assert.Equal(t, "prime", evs[0].Type)

	evicted := r.resume(evs[1].ID)
	assert.Equal(t, http.StatusBadRequest, evicted.StatusCode)
	assert.Equal(t, "failed to replay events\n", body(t, evicted))

	head := r.resume(evs[len(evs)-1].ID)
	assert.Equal(t, http.StatusOK, head.StatusCode)
	assert.Empty(t, sse(t, head))

	retained := r.resume(evs[len(evs)-3].ID)
	assert.Equal(t, http.StatusOK, retained.StatusCode)
	assert.Len(t, sse(t, retained), 2, "the last progress notification and the result")
}

// TestGoSDKServerExpireDuringCall_CurrentBehaviour expires a session (the
// SDK's own close, as after its idle timeout or a DELETE) while a charge
// runs. The SDK keeps the session half open until the tool returns: a new
// request is still accepted and answered 200 with a priming event and no
// response. The charge then completes, but its result is never delivered:
// its stream ends after the priming event too. Only then does the session
// answer 404.
func TestGoSDKServerExpireDuringCall_CurrentBehaviour(t *testing.T) {
	_, l, url := startServer(t, ServerConfig{})
	r := rawConnect(t, url+"/mcp")
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	charged := make(chan []mcpwire.Event, 1)
	go func() {
		req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge",`+
			`"arguments":{"order_id":"o","amount_cents":1,"duration_ms":200}}}`)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			charged <- nil
			return
		}
		defer resp.Body.Close()
		charged <- sse(t, resp)
	}()
	await(t, started, "the charge to start")
	resp, err := http.Post(url+"/control/expire?session="+r.session, "", nil)
	require.NoError(t, err)
	resp.Body.Close()

	ping := sse(t, r.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`))
	assert.Len(t, ping, 1)
	assert.Equal(t, "prime", ping[0].Type)
	evs := <-charged
	assert.Len(t, evs, 1, "only the priming event: the result was dropped")
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, 1, l.Count(sideeffects.KindResultWritten))
	// The SDK forgets the session a moment after the stream ends, with no
	// signal to wait on.
	assert.Eventually(t, func() bool {
		return r.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`).StatusCode == http.StatusNotFound
	}, 5*time.Second, 5*time.Millisecond)
}

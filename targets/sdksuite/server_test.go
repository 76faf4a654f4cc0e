package sdksuite

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
	mcpwire "github.com/chaosrun/chaosrun/wire/mcp"
)

// eachSDK runs test against every SDK of the table, in parallel.
func eachSDK(t *testing.T, test func(t *testing.T, s sdk)) {
	for _, s := range sdks {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, s)
		})
	}
}

// connectPlain connects a plain go-sdk client. Its standalone GET stream
// is off where the server would split a call's progress between that
// stream and the call's own (see TestServerProgressStaysOnTheCallsStream_CurrentBehaviour).
func connectPlain(t *testing.T, s sdk, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, opts)
	cs, err := c.Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: newHTTPClient(t), DisableStandaloneSSE: s.server.splitsProgress},
		&mcp.ClientSessionOptions{ProtocolVersion: mcpwire.Version20251125})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func TestSDKVersionIsThePinnedOne(t *testing.T) {
	gomod, err := os.ReadFile("../../go.mod")
	require.NoError(t, err)
	eachSDK(t, func(t *testing.T, s sdk) {
		assert.Regexp(t, `(?m)^\s*`+regexp.QuoteMeta(s.module)+` `+regexp.QuoteMeta(s.version)+`(\s|$)`, string(gomod))
	})
}

func TestServerWithPlainGoSDKClient(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		h, l, url := startServer(t, s, serverConfig{})
		var mu sync.Mutex
		var progress []float64
		cs := connectPlain(t, s, url, &mcp.ClientOptions{
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
		require.NoError(t, h.Close())

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
			assert.Equal(t, s.name, r.Source)
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
				assert.Zero(t, r.EventID, "tools cannot see the SDK's event ids")
			case sideeffects.KindCallFinished:
				assert.False(t, r.IsError)
				assert.Empty(t, r.Detail, "the request context lived through the call")
			}
			if r.Kind != sideeffects.KindSessionOpened && r.Kind != sideeffects.KindSessionClosed {
				assert.NotEmpty(t, r.RequestID, "%+v", r)
			}
		}
	})
}

func TestServerIdempotencyKey(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
		cs := connectPlain(t, s, url, nil)
		for range 2 {
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: mcpwire.ToolCharge,
				Arguments: map[string]any{"order_id": "o-1", "amount_cents": 10, "idempotency_key": "k"}})
			require.NoError(t, err)
			require.False(t, res.IsError)
		}
		assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
		assert.Equal(t, 1, l.Count(sideeffects.KindChargeDeduplicated))
	})
}

func TestServerRejectsBadArguments(t *testing.T) {
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
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
		cs := connectPlain(t, s, url, nil)
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
	})
}

func TestNewServerRejectsNegativeSettings(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		for _, cfg := range []serverConfig{{retentionEvents: -1}, {sessionTTL: -1}, {chargeDuration: -1}} {
			_, err := s.server.start(cfg)
			assert.Error(t, err, "%+v", cfg)
		}
	})
}

func TestServerControl(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
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
			{http.MethodGet, "/control/status", http.StatusOK, "sdk_version", s.version},
			{http.MethodPost, "/control/terminate?session=" + r.session, http.StatusNotImplemented, "message", s.terminateUnsupported},
			{http.MethodPost, "/control/expire?session=nope", http.StatusNotFound, "error", "session_not_found"},
			{http.MethodPost, "/control/expire", http.StatusOK, "sessions", []any{r.session}},
		}
		for _, tc := range tests {
			code, out := control(tc.method, tc.path)
			assert.Equal(t, tc.status, code, tc.path)
			assert.Equal(t, tc.value, out[tc.field], tc.path)
		}
		closed := l.Next(kindIs(sideeffects.KindSessionClosed))
		if s.server.expireWaitsForCalls {
			if l.Count(sideeffects.KindSessionClosed) == 0 {
				await(t, closed, "the session to close")
			}
		} else {
			require.Len(t, l.Of(sideeffects.KindSessionClosed), 1, "the session is closed within the expire")
		}
		assert.Equal(t, "expired", l.Of(sideeffects.KindSessionClosed)[0].Reason)
		resp := r.post(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

// startCharge starts a charge of the tool's default duration on r's
// session, and returns once the tool has started.
func startCharge(t *testing.T, l *sideeffects.Memory, r *raw) {
	t.Helper()
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	go func() {
		req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge","arguments":{"order_id":"o","amount_cents":1}}}`)
		if resp, err := r.hc.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	await(t, started, "the charge to start")
}

func TestServerStatusCountsInflightCalls(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{chargeDuration: time.Hour})
		r := rawConnect(t, url+"/mcp")
		startCharge(t, l, r)
		resp, err := r.hc.Get(url + "/control/status")
		require.NoError(t, err)
		defer resp.Body.Close()
		var st map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
		assert.Equal(t, 1.0, st["inflight_calls"])
		assert.Equal(t, 1.0, st["sessions"])
	})
}

// TestServerCloseEndsRunningTools checks that Close does not wait out a
// long charge: the tool ends with an error result and no charge.
func TestServerCloseEndsRunningTools(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		h, l, url := startServer(t, s, serverConfig{chargeDuration: time.Hour})
		startCharge(t, l, rawConnect(t, url+"/mcp"))
		finished := l.Next(kindIs(sideeffects.KindCallFinished))
		require.NoError(t, h.Close())
		if l.Count(sideeffects.KindCallFinished) == 0 {
			await(t, finished, "the charge to end")
		}
		assert.Zero(t, l.Count(sideeffects.KindCharge))
		ended := l.Of(sideeffects.KindCallFinished)
		require.Len(t, ended, 1)
		assert.True(t, ended[0].IsError)
		assert.Equal(t, "shutdown", ended[0].Reason)
		assert.Equal(t, "shutdown", l.Of(sideeffects.KindSessionClosed)[0].Reason)
	})
}

// TestServerEvictedLastEventID_CurrentBehaviour resumes a chatty stream
// whose first events the server no longer holds (go-sdk's MemoryEventStore
// bounds bytes across sessions, mcp-go's adapter bounds events per
// session). Both answer 400 with a plain-text body, the go-sdk's the same
// as for any bad request, mcp-go's the same as for an id never issued, so a
// client cannot tell eviction from its own mistake. A resume from the
// stream's last event gets 200 and an empty stream, and one from its last
// progress notification the result.
func TestServerEvictedLastEventID_CurrentBehaviour(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, _, url := startServer(t, s, serverConfig{retentionEvents: 5})
		r := rawConnect(t, url+"/mcp")
		resp := r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",` +
			`"arguments":{"events":30},"_meta":{"progressToken":"t"}}}`)
		evs := sse(t, resp)
		first := 0 // the first progress notification
		if s.server.primes {
			first = 1
			assert.Equal(t, "prime", evs[0].Type)
		}
		require.Len(t, evs, first+31, "the priming event if any, 30 progress notifications, result")
		for _, ev := range evs {
			require.NotEmpty(t, ev.ID, "every event has an id")
		}

		evicted := r.resume(evs[first].ID)
		assert.Equal(t, http.StatusBadRequest, evicted.StatusCode)
		assert.Equal(t, s.server.evicted, body(t, evicted))

		head := r.resume(evs[len(evs)-1].ID)
		assert.Equal(t, http.StatusOK, head.StatusCode)
		assert.Empty(t, sse(t, head))

		retained := r.resume(evs[len(evs)-3].ID)
		assert.Equal(t, http.StatusOK, retained.StatusCode)
		assert.Len(t, sse(t, retained), 2, "the last progress notification and the result")
	})
}

// TestServerExpireDuringCall_CurrentBehaviour expires a session through the
// SDK (as its idle timeout or a DELETE does) while a charge runs. The
// go-sdk keeps the session half open until the tool returns: a new request
// is still accepted and answered 200 with a priming event and no response;
// the charge then completes, but its result is never delivered (its stream
// ends after the priming event too), and only then does the session answer
// 404. mcp-go forgets the session at once (404 for new requests) but the
// call goes on, and its result still reaches the client on the call's open
// POST.
func TestServerExpireDuringCall_CurrentBehaviour(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		l := sideeffects.NewMemory()
		charging := hold(l, kindIs(sideeffects.KindCharge)) // the tool runs until released
		url := serve(t, s.server, serverConfig{recorder: charging})
		r := rawConnect(t, url+"/mcp")
		started := l.Next(kindIs(sideeffects.KindCallStarted))
		answered := make(chan *http.Response, 1)
		go func() {
			req := r.request(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"charge",`+
				`"arguments":{"order_id":"o","amount_cents":1,"duration_ms":1}}}`)
			resp, _ := r.hc.Do(req) // nil when it failed
			answered <- resp
		}()
		await(t, started, "the charge to start")
		resp, err := r.hc.Post(url+"/control/expire?session="+r.session, "", nil)
		require.NoError(t, err)
		resp.Body.Close()

		closedAtOnce := l.Count(sideeffects.KindSessionClosed)
		ping := r.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
		close(charging.release)
		call := <-answered
		require.NotNil(t, call, "the charge's POST was answered")
		defer call.Body.Close()
		if s.server.expireWaitsForCalls {
			evs := sse(t, ping)
			assert.Len(t, evs, 1)
			assert.Equal(t, "prime", evs[0].Type)
			assert.Len(t, sse(t, call), 1, "only the priming event: the result was dropped")
		} else {
			assert.Equal(t, 1, closedAtOnce, "closed before the call ends")
			assert.Equal(t, http.StatusNotFound, ping.StatusCode)
			assert.Contains(t, body(t, call), `"structuredContent":{"charged":true,"order_id":"o","amount_cents":1}`)
		}
		assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
		assert.Equal(t, 1, l.Count(sideeffects.KindResultWritten), "handed to the SDK, delivered or not")
		// The go-sdk forgets the session a moment after the call's stream
		// ends, with no signal to wait on.
		assert.Eventually(t, func() bool {
			return r.post(`{"jsonrpc":"2.0","id":4,"method":"ping"}`).StatusCode == http.StatusNotFound
		}, 5*time.Second, 5*time.Millisecond)
	})
}

// TestServerDeadSessionAnswers_CurrentBehaviour shows what a server answers
// once a session is gone: a POST, a resume of one of its events, and a GET
// without Last-Event-ID. The go-sdk answers 404 to all three; mcp-go
// answers 404 to the POST, 400 to the resume (its events were purged with
// it), and 200 to the GET, which opens a fresh listening stream under the
// dead session's id.
func TestServerDeadSessionAnswers_CurrentBehaviour(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
		r := rawConnect(t, url+"/mcp")
		evs := sse(t, r.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty",`+
			`"arguments":{"events":1},"_meta":{"progressToken":"t"}}}`))
		require.NotEmpty(t, evs)
		closed := l.Next(kindIs(sideeffects.KindSessionClosed))
		resp, err := r.hc.Post(url+"/control/expire?session="+r.session, "", nil)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		if l.Count(sideeffects.KindSessionClosed) == 0 {
			await(t, closed, "the session to close")
		}

		assert.Equal(t, s.server.dead.post, r.post(`{"jsonrpc":"2.0","id":3,"method":"ping"}`).StatusCode)
		assert.Equal(t, s.server.dead.resume, r.resume(evs[0].ID).StatusCode)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		got := r.do(r.request(http.MethodGet, "").WithContext(ctx))
		assert.Equal(t, s.server.dead.listen, got.StatusCode)
		if s.server.dead.listen == http.StatusOK {
			assert.Equal(t, mcpwire.ContentTypeSSE, got.Header.Get("Content-Type"))
		}
	})
}

// TestServerProgressStaysOnTheCallsStream_CurrentBehaviour opens the
// standalone GET stream, as the go-sdk client does, and runs chatty calls.
// The go-sdk sends all of a call's progress on the call's own stream.
// mcp-go reads a session's notifications from one channel into both the
// call's stream and the standalone stream, so a call's progress is split
// between them, in any proportion (all of it on either side included),
// with no fault at all: a client that stops reading the standalone stream
// loses what went there. A call is made again, up to ten times, until one
// is split.
func TestServerProgressStaysOnTheCallsStream_CurrentBehaviour(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, _, url := startServer(t, s, serverConfig{})
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
				if len(ev.Data) > 0 { // not a priming event
					onListen <- progressOf(ev)
				}
			}
		}()
		const n, tries = 40, 10
		split := false
		for try := range tries {
			onCall := 0
			for _, ev := range sse(t, r.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chatty",`+
				`"arguments":{"events":%d},"_meta":{"progressToken":"t"}}}`, 2+try, n))) {
				if progressOf(ev) > 0 {
					onCall++
				}
			}
			if onCall == n {
				continue
			}
			split = true
			for range n - onCall {
				select {
				case seq := <-onListen:
					assert.Positive(t, seq)
				case <-time.After(10 * time.Second):
					t.Fatalf("only %d of %d events on the call's stream, and fewer on the standalone one", onCall, n)
				}
			}
			break
		}
		assert.Equal(t, s.server.splitsProgress, split, "some of a call's progress went to the standalone stream")
		if !s.server.splitsProgress {
			assert.Empty(t, onListen, "none on the standalone stream")
		}
	})
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

package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// request is what a conformance case sends.
type request struct {
	method, path string
	h            http.Header
	body         string
}

func post(sid, version, body string) request {
	return request{method: http.MethodPost, h: headers(sid, version), body: body}
}

func get(sid, version string) request {
	h := headers(sid, version)
	h.Del("Content-Type")
	h.Set("Accept", mcp.ContentTypeSSE)
	return request{method: http.MethodGet, h: h}
}

func (r request) with(key, value string) request {
	h := r.h.Clone()
	h.Set(key, value)
	r.h = h
	return r
}

func (r request) without(key string) request {
	h := r.h.Clone()
	h.Del(key)
	r.h = h
	return r
}

const (
	listTools    = `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`
	initialized  = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	responseOnly = `{"jsonrpc":"2.0","id":"srv-1","result":{}}`
)

func TestStatusCodes(t *testing.T) {
	ts := startServer(t, Config{AllowedOrigins: []string{"https://ok.example"}})
	s11, v11 := ts.initialize(t, mcp.Version20251125)
	s06, v06 := ts.initialize(t, mcp.Version20250618)
	s03, v03 := ts.initialize(t, mcp.Version20250326)
	ts.call(t, s11, v11, 77, mcp.ToolCharge, map[string]any{"order_id": "busy", "amount_cents": 1, "duration_ms": 5000})
	init := initBody(t, mcp.Version20251125, "c")

	tests := []struct {
		name   string
		req    request
		status int
		code   string // "error" of a JSON error body
		rpc    int    // JSON-RPC error code of the body
	}{
		{"PUT is not allowed", request{method: http.MethodPut, h: headers(s11, v11)}, 405, errMethodNotAllowed, 0},
		{"PATCH is not allowed", request{method: http.MethodPatch, h: headers(s11, v11)}, 405, errMethodNotAllowed, 0},
		{"disallowed Origin", post("", "", init).with("Origin", "https://evil.example"), 403, errForbiddenOrigin, 0},
		{"disallowed Origin on control", request{method: http.MethodGet, path: "/control/status", h: http.Header{"Origin": {"https://evil.example"}}}, 403, errForbiddenOrigin, 0},
		{"allowed Origin", post("", "", init).with("Origin", "https://ok.example"), 200, "", 0},
		{"allowed Origin, host in capitals", post("", "", init).with("Origin", "HTTPS://OK.Example"), 200, "", 0},
		{"allowed Origin, explicit default port", post("", "", init).with("Origin", "https://ok.example:443"), 200, "", 0},
		{"allowed host on another port", post("", "", init).with("Origin", "https://ok.example:8443"), 403, errForbiddenOrigin, 0},
		{"allowed host over http", post("", "", init).with("Origin", "http://ok.example"), 403, errForbiddenOrigin, 0},
		{"text/plain body", post(s11, v11, listTools).with("Content-Type", "text/plain"), 415, errUnsupportedMediaType, 0},
		{"no Content-Type", post(s11, v11, listTools).without("Content-Type"), 415, errUnsupportedMediaType, 0},
		{"JSON with charset", post(s11, v11, listTools).with("Content-Type", "application/json; charset=utf-8"), 200, "", 0},
		{"POST accepting neither", post(s11, v11, listTools).with("Accept", "text/html"), 406, errNotAcceptable, 0},
		{"POST accepting both at q=0", post(s11, v11, listTools).with("Accept", "application/json;q=0, text/event-stream;q=0"), 406, errNotAcceptable, 0},
		{"GET not accepting SSE", get(s11, v11).with("Accept", "application/json"), 406, errNotAcceptable, 0},
		{"body over 4 MiB", post(s11, v11, `{"jsonrpc":"2.0","method":"x","params":"`+strings.Repeat("a", maxBodyBytes)+`"}`), 413, errBodyTooLarge, 0},
		{"invalid JSON", post(s11, v11, `{"jsonrpc":`), 400, "", mcp.CodeParseError},
		{"empty body", post(s11, v11, ``), 400, "", mcp.CodeParseError},
		{"JSON but not JSON-RPC", post(s11, v11, `{"jsonrpc":"1.0","id":1,"method":"ping"}`), 400, "", mcp.CodeInvalidRequest},
		{"empty batch", post(s03, v03, `[]`), 400, "", mcp.CodeInvalidRequest},
		{"no session id", post("", "", listTools), 400, errMissingSession, 0},
		{"empty session id", post("", "", listTools).with(mcp.HeaderSessionID, ""), 400, errMissingSession, 0},
		{"unknown session", post(strings.Repeat("0", 32), "", listTools), 404, errSessionNotFound, 0},
		{"GET without session", get("", ""), 400, errMissingSession, 0},
		{"GET unknown session", get("nope", ""), 404, errSessionNotFound, 0},
		{"unsupported protocol version", post(s11, "2024-11-05", listTools), 400, errBadProtocolVersion, 0},
		{"unsupported protocol version before session", post("", "2099-01-01", listTools), 400, "", mcp.CodeUnsupportedProtocolVersion},
		{"protocol version not the session's", post(s11, mcp.Version20250618, listTools), 400, errVersionMismatch, 0},
		{"initialize with a session id", post(s11, "", init), 400, errInitializeSession, 0},
		{"initialize in a batch", post("", "", "["+init+"]"), 400, errInitializeBatch, 0},
		{"initialize without params", post("", "", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`), 400, "", mcp.CodeInvalidParams},
		{"batch on 2025-06-18", post(s06, v06, "["+listTools+"]"), 400, errBatchNotSupported, 0},
		{"batch on 2025-11-25", post(s11, v11, "["+listTools+"]"), 400, errBatchNotSupported, 0},
		{"batch on 2025-03-26", post(s03, v03, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]`), 200, "", 0},
		{"repeated id in a batch", post(s03, v03, `[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`), 400, "", mcp.CodeInvalidRequest},
		{"id already in flight", post(s11, v11, `{"jsonrpc":"2.0","id":77,"method":"ping"}`), 400, "", mcp.CodeInvalidRequest},
		{"notification only", post(s11, v11, initialized), 202, "", 0},
		{"response only", post(s11, v11, responseOnly), 202, "", 0},
		{"notifications in a batch on 2025-03-26", post(s03, v03, "["+initialized+","+responseOnly+"]"), 202, "", 0},
		{"malformed Last-Event-ID", get(s11, v11).with(mcp.HeaderLastEventID, "abc"), 400, errBadLastEventID, 0},
		{"negative Last-Event-ID", get(s11, v11).with(mcp.HeaderLastEventID, "-1"), 400, errBadLastEventID, 0},
		{"signed Last-Event-ID", get(s11, v11).with(mcp.HeaderLastEventID, "+1"), 400, errBadLastEventID, 0},
		{"empty Last-Event-ID", get(s11, v11).with(mcp.HeaderLastEventID, ""), 400, errBadLastEventID, 0},
		{"Last-Event-ID zero", get(s11, v11).with(mcp.HeaderLastEventID, "0"), 400, errBadLastEventID, 0},
		{"Last-Event-ID never issued", get(s11, v11).with(mcp.HeaderLastEventID, "9999"), 400, errBadLastEventID, 0},
		{"Last-Event-ID of another session's range", get(s06, v06).with(mcp.HeaderLastEventID, "50"), 400, errBadLastEventID, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resp := ts.do(t, ctx, tc.req.method, tc.req.path, tc.req.h, tc.req.body)
			require.Equal(t, tc.status, resp.StatusCode)
			switch {
			case tc.code != "":
				var body errorBody
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				assert.Equal(t, tc.code, body.Error)
			case tc.rpc != 0:
				var m mcp.Message
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
				require.NotNil(t, m.Error)
				assert.Equal(t, tc.rpc, m.Error.Code)
			case tc.status == http.StatusAccepted:
				b, _ := io.ReadAll(resp.Body)
				assert.Empty(t, b, "202 has no body")
			}
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, "GET, POST, DELETE", resp.Header.Get("Allow"))
			}
		})
	}
}

// TestOriginByDefault holds the DNS-rebinding defence of a server
// configured with no origins: absent and loopback origins only.
func TestOriginByDefault(t *testing.T) {
	ts := startServer(t, Config{})
	init := initBody(t, mcp.Version20251125, "c")
	tests := []struct {
		origin string // "" sends none
		status int
	}{
		{"", 200},
		{"http://localhost", 200},
		{"http://LocalHost:6274", 200},
		{"https://app.localhost:3000", 200},
		{"http://127.0.0.1:8080", 200},
		{"http://127.9.9.9", 200},
		{"http://[::1]:9000", 200},
		{"http://evil.example", 403},
		{"http://localhost.evil.example", 403},
		{"http://127.0.0.1.nip.io", 403},
		{"http://10.0.0.1", 403},
		{"null", 403},
		{"file://localhost", 403},
		{"http://localhost/path", 403},
		{"not a url", 403},
	}
	for _, tc := range tests {
		t.Run("origin "+tc.origin, func(t *testing.T) {
			req := post("", "", init)
			if tc.origin != "" {
				req = req.with("Origin", tc.origin)
			}
			resp := ts.do(t, context.Background(), req.method, "", req.h, req.body)
			require.Equal(t, tc.status, resp.StatusCode)
			if tc.status == http.StatusForbidden {
				var body errorBody
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				assert.Equal(t, errForbiddenOrigin, body.Error)
			}
		})
	}
	t.Run("two Origin headers", func(t *testing.T) {
		req := post("", "", init)
		req.h.Add("Origin", "http://localhost")
		req.h.Add("Origin", "http://localhost")
		resp := ts.do(t, context.Background(), req.method, "", req.h, req.body)
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
	t.Run("wildcard", func(t *testing.T) {
		open := startServer(t, Config{AllowedOrigins: []string{"*"}})
		req := post("", "", init).with("Origin", "http://evil.example")
		resp := open.do(t, context.Background(), req.method, "", req.h, req.body)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
	})
}

func TestParseErrorHasNullID(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	resp := ts.do(t, context.Background(), http.MethodPost, "", headers(sid, v), `{nope`)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Contains(t, m, "id")
	assert.Nil(t, m["id"])
	assert.Equal(t, "2.0", m["jsonrpc"])
}

func TestBatchOn20250326AnswersEveryRequest(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20250326)
	body := `[{"jsonrpc":"2.0","id":1,"method":"ping"},` + initialized + `,{"jsonrpc":"2.0","id":"b","method":"tools/list"}]`
	for _, accept := range []string{"text/event-stream", "application/json"} {
		t.Run(accept, func(t *testing.T) {
			h := headers(sid, v)
			h.Set("Accept", accept)
			resp := ts.do(t, context.Background(), http.MethodPost, "", h, body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			var ids []string
			if accept == "application/json" {
				var msgs []mcp.Message
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&msgs), "a batch is answered with an array")
				for _, m := range msgs {
					ids = append(ids, m.IDString())
				}
			} else {
				for _, ev := range readAll(t, resp) {
					m := decode(t, ev.Data)
					ids = append(ids, m.IDString())
				}
			}
			assert.ElementsMatch(t, []string{"1", "b"}, ids)
		})
	}
}

func TestVersionNegotiation(t *testing.T) {
	ts := startServer(t, Config{})
	tests := []struct{ asked, want string }{
		{mcp.Version20250326, mcp.Version20250326},
		{mcp.Version20250618, mcp.Version20250618},
		{mcp.Version20251125, mcp.Version20251125},
		{"2024-11-05", mcp.LatestVersion},
		{"2026-07-28", mcp.LatestVersion},
		{"", mcp.LatestVersion},
	}
	for _, tc := range tests {
		t.Run("asked "+tc.asked, func(t *testing.T) {
			resp := ts.do(t, context.Background(), http.MethodPost, "", headers("", ""), initBody(t, tc.asked, "negotiator-"+tc.asked))
			require.Equal(t, http.StatusOK, resp.StatusCode)
			sid := resp.Header.Get(mcp.HeaderSessionID)
			assert.Regexp(t, "^[0-9a-f]{32}$", sid)
			var res mcp.InitializeResult
			require.NoError(t, json.Unmarshal(resultOf(t, resp).Result, &res))
			assert.Equal(t, tc.want, res.ProtocolVersion)
			assert.JSONEq(t, `{"tools":{}}`, string(res.Capabilities))
			opened := ts.records(sideeffects.KindSessionOpened, func(r sideeffects.Record) bool { return r.Session == sid })
			require.Len(t, opened, 1)
			assert.Equal(t, "negotiator-"+tc.asked, opened[0].Client)
			assert.Equal(t, tc.want, opened[0].Detail)
		})
	}
}

func TestInitializeAnsweredAsJSON(t *testing.T) {
	ts := startServer(t, Config{})
	h := headers("", "")
	h.Set("Accept", mcp.ContentTypeJSON)
	resp := ts.do(t, context.Background(), http.MethodPost, "", h, initBody(t, mcp.Version20251125, "json-client"))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, mcp.ContentTypeJSON, resp.Header.Get("Content-Type"))
	sid := resp.Header.Get(mcp.HeaderSessionID)
	require.Len(t, sid, 32)
	var res mcp.InitializeResult
	require.NoError(t, json.Unmarshal(resultOf(t, resp).Result, &res))
	assert.Equal(t, mcp.Version20251125, res.ProtocolVersion)
	ok := ts.do(t, context.Background(), http.MethodPost, "", headers(sid, res.ProtocolVersion), listTools)
	assert.Equal(t, http.StatusOK, ok.StatusCode)
}

func TestSessionIDsAreDistinct(t *testing.T) {
	ts := startServer(t, Config{})
	seen := map[string]bool{}
	for range 20 {
		sid, _ := ts.initialize(t, mcp.Version20251125)
		require.False(t, seen[sid])
		seen[sid] = true
	}
}

func TestProtocolVersionHeader(t *testing.T) {
	ts := startServer(t, Config{})
	for _, version := range mcp.Versions {
		sid, _ := ts.initialize(t, version)
		other := mcp.Version20250326
		if version == other {
			other = mcp.Version20251125
		}
		tests := []struct {
			name, header string
			status       int
		}{
			{"absent means the negotiated version", "", 200},
			{"the negotiated version", version, 200},
			{"another supported version", other, 400},
			{"an unsupported version", "2024-11-05", 400},
			{"garbage", "v1", 400},
		}
		for _, tc := range tests {
			t.Run(version+"/"+tc.name, func(t *testing.T) {
				for _, req := range []request{post(sid, tc.header, listTools), get(sid, tc.header).with(mcp.HeaderLastEventID, "1")} {
					resp := ts.do(t, context.Background(), req.method, "", req.h, req.body)
					assert.Equal(t, tc.status, resp.StatusCode, req.method)
				}
			})
		}
	}
}

func TestPrimingAndRetryOnlyOn20251125(t *testing.T) {
	ts := startServer(t, Config{Retry: 1500 * time.Millisecond, Keepalive: 20 * time.Millisecond})
	for _, version := range mcp.Versions {
		t.Run(version, func(t *testing.T) {
			sid, _ := ts.initialize(t, version)
			primed := version == mcp.Version20251125

			first := ts.open(t, http.MethodPost, headers(sid, version), listTools).next(t)
			assert.NotEmpty(t, first.ID, "every event carries an id")
			assert.Equal(t, primed, len(first.Data) == 0, "priming event on the POST stream")
			assert.Equal(t, primed, first.Retry == 1500*time.Millisecond, "retry on the priming event")

			req := get(sid, version)
			line := firstLine(t, ts.open(t, req.method, req.h, ""))
			if primed {
				assert.True(t, strings.HasPrefix(line, "id: "), "the GET stream starts with a priming event, got %q", line)
			} else {
				assert.Equal(t, ": keepalive", line, "no priming event before 2025-11-25")
			}
		})
	}
}

// TestHeaderGoesOutWithThePrimingEvent: the first flush of an SSE response
// holds the priming event on 2025-11-25, so no cut can deliver the 200
// without a cursor; without events to send, the header is still flushed at
// once, so the client sees its stream open.
func TestHeaderGoesOutWithThePrimingEvent(t *testing.T) {
	ts := startServer(t, Config{})
	for _, tc := range []struct {
		version, method string
		primed          bool
	}{
		{mcp.Version20251125, http.MethodPost, true},
		{mcp.Version20251125, http.MethodGet, true},
		{mcp.Version20250618, http.MethodPost, false},
		{mcp.Version20250618, http.MethodGet, false},
	} {
		t.Run(tc.version+"/"+tc.method, func(t *testing.T) {
			sid, v := ts.initialize(t, tc.version)
			body := ""
			if tc.method == http.MethodPost {
				body = requestBody(t, 7, mcp.MethodToolsCall, map[string]any{
					"name": mcp.ToolCharge, "arguments": map[string]any{"order_id": "o-" + tc.version, "amount_cents": 1, "duration_ms": 200},
				})
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req := httptest.NewRequestWithContext(ctx, tc.method, "/mcp", strings.NewReader(body))
			req.Header = headers(sid, v)
			w := newSyncWriter()
			served := make(chan struct{})
			go func() {
				defer close(served)
				ts.Handler().ServeHTTP(w, req)
			}()
			select {
			case <-w.flushed:
			case <-time.After(testTimeout):
				t.Fatal("the response was never flushed")
			}
			cancel()
			<-served
			assert.Equal(t, http.StatusOK, w.status)
			if tc.primed {
				assert.Regexp(t, `^id: \d+\n`, w.firstFlush(), "the first flush carries the priming event")
			} else {
				assert.Empty(t, w.firstFlush(), "nothing to send yet: the header goes out alone")
			}
		})
	}
}

func firstLine(t *testing.T, s *stream) string {
	t.Helper()
	line, err := bufio.NewReader(s.resp.Body).ReadString('\n')
	require.NoError(t, err)
	return strings.TrimSuffix(line, "\n")
}

func TestRetryFieldByDefault(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	first := ts.open(t, http.MethodPost, headers(sid, v), listTools).next(t)
	assert.Empty(t, first.Data)
	assert.Equal(t, DefaultRetry, first.Retry)
}

func TestResponseModes(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20250618)
	tests := []struct {
		accept string // "-" sends no Accept header
		want   string
	}{
		{"application/json", mcp.ContentTypeJSON},
		{"application/*", mcp.ContentTypeJSON},
		{"text/event-stream", mcp.ContentTypeSSE},
		{"application/json, text/event-stream", mcp.ContentTypeSSE},
		{"application/json, text/event-stream;q=0", mcp.ContentTypeJSON},
		{"*/*", mcp.ContentTypeSSE},
		{"-", mcp.ContentTypeSSE},
	}
	for i, tc := range tests {
		t.Run(tc.accept, func(t *testing.T) {
			h := headers(sid, v)
			if tc.accept == "-" {
				h.Del("Accept")
			} else {
				h.Set("Accept", tc.accept)
			}
			body := requestBody(t, 100+i, mcp.MethodToolsCall, map[string]any{"name": "charge",
				"arguments": map[string]any{"order_id": "mode", "amount_cents": 1}})
			resp := ts.do(t, context.Background(), http.MethodPost, "", h, body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, tc.want, resp.Header.Get("Content-Type"))
			_, sc := toolResult(t, resultOf(t, resp))
			assert.Equal(t, true, sc["charged"])
		})
	}
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), len(tests))
	jsonWritten := ts.records(sideeffects.KindResultWritten, func(r sideeffects.Record) bool { return r.EventID == 0 })
	assert.Len(t, jsonWritten, 3, "JSON answers are recorded with event_id 0")
}

func TestJSONModeProgressGoesToStandaloneStream(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20250618)
	g := get(sid, v)
	standalone := ts.open(t, g.method, g.h, "")
	h := headers(sid, v)
	h.Set("Accept", mcp.ContentTypeJSON)
	resp := ts.do(t, context.Background(), http.MethodPost, "", h, requestBody(t, 9, mcp.MethodToolsCall,
		map[string]any{"name": "chatty", "arguments": map[string]any{"events": 3}}))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	_, sc := toolResult(t, resultOf(t, resp))
	assert.EqualValues(t, 3, sc["emitted"])
	for seq := 1; seq <= 3; seq++ {
		m := decode(t, standalone.next(t).Data)
		require.Equal(t, mcp.MethodProgress, m.Method)
		var p mcp.ProgressParams
		require.NoError(t, json.Unmarshal(m.Params, &p))
		assert.EqualValues(t, seq, p.Progress)
		assert.EqualValues(t, 9, p.ProgressToken, "without a progressToken the request id stands in")
	}
	for _, r := range ts.records(sideeffects.KindEventEmitted, nil) {
		assert.Equal(t, "get", r.Stream)
	}
}

func TestRequestsAnswered(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	tests := []struct {
		name, body string
		check      func(t *testing.T, m mcp.Message)
	}{
		{"ping", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, func(t *testing.T, m mcp.Message) {
			assert.JSONEq(t, `{}`, string(m.Result))
		}},
		{"tools/list", listTools, func(t *testing.T, m mcp.Message) {
			var res struct {
				Tools []struct {
					Name        string          `json:"name"`
					InputSchema json.RawMessage `json:"inputSchema"`
				} `json:"tools"`
			}
			require.NoError(t, json.Unmarshal(m.Result, &res))
			require.Len(t, res.Tools, 2)
			assert.Equal(t, "charge", res.Tools[0].Name)
			assert.Equal(t, "chatty", res.Tools[1].Name)
			assert.Contains(t, string(res.Tools[0].InputSchema), `"required":["order_id","amount_cents"]`)
		}},
		{"unknown method", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, func(t *testing.T, m mcp.Message) {
			require.NotNil(t, m.Error)
			assert.Equal(t, mcp.CodeMethodNotFound, m.Error.Code)
		}},
		{"unknown tool", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"refund"}}`, func(t *testing.T, m mcp.Message) {
			require.NotNil(t, m.Error)
			assert.Equal(t, mcp.CodeInvalidParams, m.Error.Code)
		}},
		{"charge without order_id", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"charge","arguments":{"amount_cents":5}}}`, func(t *testing.T, m mcp.Message) {
			res, sc := toolResult(t, m)
			assert.True(t, res.IsError)
			assert.Equal(t, "invalid_arguments", sc["error"])
		}},
		{"charge with a string amount", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"charge","arguments":{"order_id":"x","amount_cents":"5"}}}`, func(t *testing.T, m mcp.Message) {
			res, _ := toolResult(t, m)
			assert.True(t, res.IsError)
		}},
		{"chatty with negative events", `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"chatty","arguments":{"events":-1}}}`, func(t *testing.T, m mcp.Message) {
			res, _ := toolResult(t, m)
			assert.True(t, res.IsError)
		}},
		{"chatty without arguments", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"chatty"}}`, func(t *testing.T, m mcp.Message) {
			res, _ := toolResult(t, m)
			assert.True(t, res.IsError)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do(t, context.Background(), http.MethodPost, "", headers(sid, v), tc.body)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			tc.check(t, resultOf(t, resp))
		})
	}
	assert.Empty(t, ts.records(sideeffects.KindCharge, nil), "bad arguments never charge")
}

func TestDeleteThen404(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	del := request{method: http.MethodDelete, h: headers(sid, v)}
	resp := ts.do(t, context.Background(), del.method, "", del.h, "")
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	for _, req := range []request{post(sid, v, listTools), get(sid, v), del} {
		resp := ts.do(t, context.Background(), req.method, "", req.h, req.body)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, req.method)
	}
	closed := ts.records(sideeffects.KindSessionClosed, nil)
	require.Len(t, closed, 1)
	assert.Equal(t, sid, closed[0].Session)
	assert.Equal(t, reasonDeleted, closed[0].Reason)
}

func TestIdleTTLExpires(t *testing.T) {
	ts := startServer(t, Config{SessionTTL: 50 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20251125)
	r := ts.waitRecord(t, sideeffects.KindSessionClosed, func(r sideeffects.Record) bool { return r.Session == sid })
	assert.Equal(t, reasonExpired, r.Reason)
	resp := ts.do(t, context.Background(), http.MethodPost, "", headers(sid, v), listTools)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestAttachedConnectionKeepsSessionAlive(t *testing.T) {
	// The TTL leaves room for a loaded machine between the initialize and
	// the GET that attaches; the keepalives then span over three TTLs.
	ts := startServer(t, Config{SessionTTL: 300 * time.Millisecond, Keepalive: 25 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20250618)
	g := get(sid, v)
	s := ts.open(t, g.method, g.h, "")
	br := bufio.NewReader(s.resp.Body)
	for keepalives := 0; keepalives < 40; { // 40 keepalives: over three TTLs
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == ": keepalive\n" {
			keepalives++
		}
	}
	assert.Empty(t, ts.records(sideeffects.KindSessionClosed, nil), "an attached connection keeps the session alive")
	s.cut()
	ts.waitRecord(t, sideeffects.KindSessionClosed, func(r sideeffects.Record) bool { return r.Session == sid })
}

func TestRunningToolDoesNotKeepSessionAlive(t *testing.T) {
	// Room for a loaded machine between initialize and the call; the
	// charge outlasts the TTL several times over.
	ts := startServer(t, Config{SessionTTL: 200 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 10, "duration_ms": 1000})
	s.next(t) // priming: the call is running
	s.cut()
	closed := ts.waitRecord(t, sideeffects.KindSessionClosed, func(r sideeffects.Record) bool { return r.Session == sid })
	assert.Equal(t, reasonExpired, closed.Reason)
	dropped := ts.waitRecord(t, sideeffects.KindResultDropped, forRequest("2"))
	assert.Equal(t, "session_gone", dropped.Reason)
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), 1, "the charge still happened")
	assert.Empty(t, ts.records(sideeffects.KindResultWritten, nil))
}

func TestControlEndpoints(t *testing.T) {
	ts := startServer(t, Config{})
	ctx := context.Background()
	resp := ts.do(t, ctx, http.MethodGet, "/control/healthz", nil, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	assert.JSONEq(t, `{"ok":true}`, string(b))

	a, va := ts.initialize(t, mcp.Version20251125)
	b2, vb := ts.initialize(t, mcp.Version20250618)
	ts.call(t, a, va, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 5000}).next(t)
	ga := get(a, va)
	sa := ts.open(t, ga.method, ga.h, "")
	sa.next(t) // the priming event: attached

	resp = ts.do(t, ctx, http.MethodGet, "/control/status", nil, "")
	var st statusBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	assert.Equal(t, statusBody{Sessions: 2, InflightCalls: 1, AttachedStreams: 2}, st)

	gb := get(b2, vb)
	sb := ts.open(t, gb.method, gb.h, "")
	resp = ts.do(t, ctx, http.MethodPost, "/control/terminate?session="+b2, nil, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var ended sessionsBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ended))
	assert.Equal(t, []string{b2}, ended.Sessions)
	ev := sb.next(t)
	assert.Equal(t, mcp.EventClose, ev.Type)
	assert.JSONEq(t, `{"reason":"terminated"}`, string(ev.Data))
	assert.Empty(t, sb.rest(t), "the stream ends after the close event")

	resp = ts.do(t, ctx, http.MethodPost, "/control/expire", nil, "")
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&ended))
	assert.Equal(t, []string{a}, ended.Sessions, "without ?session every live session")
	for _, ev := range sa.rest(t) {
		assert.NotEqual(t, mcp.EventClose, ev.Type, "expiry sends no close event")
	}
	for _, sid := range []string{a, b2} {
		resp := ts.do(t, ctx, http.MethodPost, "", headers(sid, ""), listTools)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	}
	reasons := map[string]string{}
	for _, r := range ts.records(sideeffects.KindSessionClosed, nil) {
		reasons[r.Session] = r.Reason
	}
	assert.Equal(t, map[string]string{a: reasonExpired, b2: reasonTerminated}, reasons)

	resp = ts.do(t, ctx, http.MethodPost, "/control/expire?session=nope", nil, "")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp = ts.do(t, ctx, http.MethodGet, "/control/expire", nil, "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
}

func TestKeepaliveCommentsArrive(t *testing.T) {
	ts := startServer(t, Config{Keepalive: 10 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20250618)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 200})
	br := bufio.NewReader(s.resp.Body)
	comments := 0
	for comments < 3 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == ": keepalive\n" {
			comments++
		}
	}
	assert.Equal(t, 3, comments, "keepalive comments on a POST stream while the tool runs")
}

// TestShutdownDrainsMemoryStore holds SIGTERM with the memory store: a
// result that finishes during the drain reaches the client before its
// stream closes, and a stream the server ends gets a retry hint.
func TestShutdownDrainsMemoryStore(t *testing.T) {
	ts := startServer(t, Config{Retry: 250 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20251125)
	g := get(sid, v)
	standalone := ts.open(t, g.method, g.h, "")
	standalone.next(t)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 200})
	s.next(t)
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()

	tail, err := io.ReadAll(standalone.resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "retry: 250\n\n", string(tail), "the standalone stream ends at once, with a retry hint")
	got := sortEvents(t, s.rest(t))
	require.Len(t, got.responses, 1, "the result finished during the drain and was delivered")
	_, sc := toolResult(t, got.responses[0])
	assert.Equal(t, true, sc["charged"])
	require.NoError(t, <-shut)
	closed := ts.records(sideeffects.KindSessionClosed, nil)
	require.Len(t, closed, 1)
	assert.Equal(t, reasonShutdown, closed[0].Reason)
}

// TestShutdownDeadlineEndsStreamsWithRetryHint: a stream whose call outlives
// the drain ends with a retry hint, not a bare close.
func TestShutdownDeadlineEndsStreamsWithRetryHint(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 10000})
	s.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(ctx) }()
	tail, _ := io.ReadAll(s.resp.Body)
	assert.Equal(t, "retry: 1000\n\n", string(tail))
	require.ErrorIs(t, <-shut, context.DeadlineExceeded)
}

// TestResumedStreamStartsWithPriming: every stream the server opens on
// 2025-11-25 starts with a priming event, a resumed one too: it repeats the
// cursor, so a resumed connection cut before any event still leaves the
// client a cursor and a retry hint.
func TestResumedStreamStartsWithPriming(t *testing.T) {
	ts := startServer(t, Config{Retry: 300 * time.Millisecond})
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 5000})
	cursor := s.next(t).ID
	s.cut()
	h := get(sid, v).h
	h.Set(mcp.HeaderLastEventID, cursor)
	first := ts.open(t, http.MethodGet, h, "").next(t)
	assert.Equal(t, cursor, first.ID)
	assert.Empty(t, first.Data)
	assert.Equal(t, 300*time.Millisecond, first.Retry)
}

package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// absent, as a fuzzed header value, leaves the header out; sidToken
// stands for the live session's id, so the fuzzer reaches past the 404.
const (
	absent   = "-"
	sidToken = "SID"
)

// fuzzRequest sends one request and returns the status and body; it reads
// an SSE body only until the headers, then hangs up. ok is false when the
// fuzzed headers cannot be sent at all.
func fuzzRequest(t *testing.T, ts *tserver, method string, h http.Header, body string) (int, []byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, ts.base+"/mcp", strings.NewReader(body))
	require.NoError(t, err)
	req.Header = h
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, false // a header value net/http refuses to send
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") == mcp.ContentTypeSSE {
		return resp.StatusCode, nil, true
	}
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, b, true
}

// waitDetached waits until no connection of sess is attached, so that one
// fuzz input cannot make the next one meet 409.
func waitDetached(t *testing.T, sess *session) {
	require.Eventually(t, func() bool { return len(sess.attachments()) == 0 }, testTimeout, 100*time.Microsecond)
}

func setHeader(h http.Header, key, v string) {
	if v != absent {
		h[key] = []string{v}
	}
}

// FuzzHeaders fuzzes Last-Event-ID, Mcp-Session-Id and MCP-Protocol-Version
// on a GET and a POST against a live 2025-06-18 session whose only event is
// id 1, and checks each answer against the documented order of checks.
func FuzzHeaders(f *testing.F) {
	ts := startServer(f, Config{Recorder: discard{}})
	sid, version := ts.initialize(f, mcp.Version20250618)
	sess, _ := ts.lookup(sid)
	for _, seed := range [][3]string{
		{"1", sidToken, version}, {"1", sidToken, absent}, {absent, sidToken, absent}, {"2", sidToken, version},
		{"0", sidToken, version}, {"01", sidToken, version}, {"abc", sidToken, version}, {"1", sidToken, mcp.Version20251125},
		{"1", sidToken, "2024-11-05"}, {"1", "", version}, {"1", absent, version}, {"1", "deadbeef", version},
		{"99999999999999999999", sidToken, version}, {" 1 ", sidToken, " " + version}, {"", sidToken, ""},
		{"1", sidToken, mcp.Version20260728},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, lastEventID, sessionID, protocolVersion string) {
		if sessionID == sidToken {
			sessionID = sid
		}
		trim := func(v string) string { return strings.Trim(v, " \t") } // as net/http reads header values
		pv, id, lei := trim(protocolVersion), trim(sessionID), trim(lastEventID)
		want := func(withLastEventID bool) int {
			switch {
			case withLastEventID && protocolVersion != absent && mcp.ModernVersion(pv):
				return http.StatusMethodNotAllowed // no GET at 2026-07-28
			case protocolVersion != absent && !mcp.SupportedVersion(pv):
				return http.StatusBadRequest
			case sessionID == absent || id == "":
				return http.StatusBadRequest
			case id != sid:
				return http.StatusNotFound
			case protocolVersion != absent && pv != version:
				return http.StatusBadRequest
			case !withLastEventID || lastEventID == absent:
				return http.StatusOK
			case lei != "1" && strings.TrimLeft(lei, "0") != "1" || len(lei) > 18:
				return http.StatusBadRequest
			}
			return http.StatusOK
		}

		h := http.Header{"Accept": {mcp.ContentTypeSSE}}
		setHeader(h, mcp.HeaderSessionID, sessionID)
		setHeader(h, mcp.HeaderProtocolVersion, protocolVersion)
		setHeader(h, mcp.HeaderLastEventID, lastEventID)
		status, _, ok := fuzzRequest(t, ts, http.MethodGet, h, "")
		if !ok {
			return
		}
		assert.Equal(t, want(true), status, "GET")
		waitDetached(t, sess)

		h = headers("", "")
		h.Set("Accept", mcp.ContentTypeJSON) // a JSON answer issues no event id: the session keeps only id 1
		setHeader(h, mcp.HeaderSessionID, sessionID)
		setHeader(h, mcp.HeaderProtocolVersion, protocolVersion)
		status, _, _ = fuzzRequest(t, ts, http.MethodPost, h, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		assert.Equal(t, want(false), status, "POST")
		waitDetached(t, sess)
	})
}

// FuzzPOSTBody fuzzes the body of a POST on a fresh session of each
// version and checks the status, and the body of every 4xx, against a
// model of the rules.
func FuzzPOSTBody(f *testing.F) {
	ts := startServer(f, Config{Recorder: discard{}, RetentionEvents: 64})
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chatty","arguments":{"events":2}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"charge","arguments":{"order_id":"f","amount_cents":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`{"jsonrpc":"2.0","id":9,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":"1","method":"ping"}]`,
		`[{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]`,
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, `[]`, `[`, `null`, ``, `{"jsonrpc":"2.0"}`,
	} {
		for v := range uint8(3) {
			f.Add([]byte(seed), v)
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, v uint8) {
		sid, version := ts.initialize(t, mcp.Versions[int(v)%len(mcp.Versions)])
		defer fuzzRequest(t, ts, http.MethodDelete, headers(sid, version), "")
		status, got, ok := fuzzRequest(t, ts, http.MethodPost, headers(sid, version), string(body))
		require.True(t, ok)
		wantStatus, wantRPC, wantErr := expectPOST(body, version)
		require.Equal(t, wantStatus, status, "body %q on %s", body, version)
		switch {
		case wantRPC != 0:
			var m mcp.Message
			require.NoError(t, json.Unmarshal(got, &m), "a JSON-RPC error body: %s", got)
			require.NotNil(t, m.Error)
			assert.Equal(t, wantRPC, m.Error.Code)
		case wantErr != "":
			var e errorBody
			require.NoError(t, json.Unmarshal(got, &e))
			assert.Equal(t, wantErr, e.Error)
		}
	})
}

// expectPOST is the model: the answer to body on a session of version.
func expectPOST(body []byte, version string) (status, rpcCode int, errCode string) {
	msgs, batch, err := mcp.ParseBody(body)
	if err != nil {
		if json.Valid(body) {
			return http.StatusBadRequest, mcp.CodeInvalidRequest, ""
		}
		return http.StatusBadRequest, mcp.CodeParseError, ""
	}
	var keys []string
	for i := range msgs {
		m := &msgs[i]
		if m.IsRequest() && m.Method == mcp.MethodInitialize {
			if batch || len(msgs) > 1 {
				return http.StatusBadRequest, 0, errInitializeBatch
			}
			return http.StatusBadRequest, 0, errInitializeSession
		}
		if m.IsRequest() {
			keys = append(keys, m.IDString())
		}
	}
	if batch && version != mcp.Version20250326 {
		return http.StatusBadRequest, 0, errBatchNotSupported
	}
	if len(keys) == 0 {
		return http.StatusAccepted, 0, ""
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			return http.StatusBadRequest, mcp.CodeInvalidRequest, ""
		}
		seen[k] = true
	}
	return http.StatusOK, 0, ""
}

// FuzzModernHeaders fuzzes the request metadata headers of a 2026-07-28
// tools/call whose body is valid, and checks the status against the order
// of checks: one MCP-Protocol-Version naming 2026-07-28, Mcp-Method equal
// to the method, Mcp-Name decoding to the tool's name.
func FuzzModernHeaders(f *testing.F) {
	ts := startServer(f, Config{Recorder: discard{}})
	body := requestBody(f, 1, mcp.MethodToolsCall, map[string]any{
		"name": mcp.ToolCharge, "arguments": map[string]any{"order_id": "f", "amount_cents": 1, "duration_ms": 1},
		"_meta": modernMeta("fuzz")})
	for _, seed := range [][3]string{
		{mcp.Version20260728, mcp.MethodToolsCall, mcp.ToolCharge},
		{mcp.Version20260728, mcp.MethodToolsCall, "=?base64?Y2hhcmdl?="},
		{mcp.Version20260728, mcp.MethodToolsCall, "=?base64?Y2hhcmdl"},
		{mcp.Version20260728, "tools/call ", mcp.ToolCharge},
		{mcp.Version20260728, absent, mcp.ToolCharge},
		{mcp.Version20251125, mcp.MethodToolsCall, mcp.ToolCharge},
		{absent, mcp.MethodToolsCall, mcp.ToolCharge},
		{"2099-01-01", mcp.MethodToolsCall, absent},
	} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, protocolVersion, method, name string) {
		trim := func(v string) string { return strings.Trim(v, " \t") }
		want := http.StatusOK
		switch decoded, ok := mcp.DecodeHeaderValue(trim(name)); {
		case protocolVersion == absent || trim(protocolVersion) != mcp.Version20260728:
			want = http.StatusBadRequest
		case method == absent || trim(method) != mcp.MethodToolsCall:
			want = http.StatusBadRequest
		case name == absent || !ok || decoded != mcp.ToolCharge:
			want = http.StatusBadRequest
		}
		h := headers("", "")
		h.Set("Accept", mcp.ContentTypeJSON)
		setHeader(h, mcp.HeaderProtocolVersion, protocolVersion)
		setHeader(h, mcp.HeaderMethod, method)
		setHeader(h, mcp.HeaderName, name)
		status, b, ok := fuzzRequest(t, ts, http.MethodPost, h, body)
		if !ok {
			return
		}
		assert.Equal(t, want, status, "%s", b)
		if status == http.StatusBadRequest {
			m, err := mcp.ParseMessage(b)
			require.NoError(t, err, "a 400 at 2026-07-28 is a JSON-RPC error: %s", b)
			require.NotNil(t, m.Error)
			assert.Contains(t, []int{mcp.CodeHeaderMismatch, mcp.CodeUnsupportedProtocolVersion}, m.Error.Code)
		}
	})
}

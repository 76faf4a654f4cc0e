package server

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// modernMeta is the _meta of a well-behaved 2026-07-28 client.
func modernMeta(client string) map[string]any {
	return map[string]any{
		mcp.MetaProtocolVersion:    mcp.Version20260728,
		mcp.MetaClientInfo:         mcp.Implementation{Name: client, Version: "1"},
		mcp.MetaClientCapabilities: map[string]any{},
	}
}

// modern is a 2026-07-28 POST with its headers mirrored from the body.
func modern(t testing.TB, id int, method string, params map[string]any) request {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	if _, ok := params["_meta"]; !ok {
		params["_meta"] = modernMeta("modern-1")
	}
	h := headers("", mcp.Version20260728)
	h.Set(mcp.HeaderMethod, method)
	if name, ok := params["name"].(string); ok {
		h.Set(mcp.HeaderName, mcp.EncodeHeaderValue(name))
	}
	return request{method: http.MethodPost, h: h, body: requestBody(t, id, method, params)}
}

func modernCharge(t testing.TB, id int, args map[string]any) request {
	return modern(t, id, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolCharge, "arguments": args})
}

// TestModernStatusCodes is the conformance table of 2026-07-28: the
// answer to each malformed or unsupported request, checked in the order
// the server checks them.
func TestModernStatusCodes(t *testing.T) {
	ts := startServer(t, Config{})
	legacySID, _ := ts.initialize(t, mcp.Version20251125)
	discover := modern(t, 1, mcp.MethodDiscover, nil)
	charge := modernCharge(t, 2, map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 1})
	noMeta := discover
	noMeta.body = requestBody(t, 1, mcp.MethodDiscover, nil)
	otherMeta := discover
	meta := modernMeta("c")
	meta[mcp.MetaProtocolVersion] = "2099-01-01"
	otherMeta.body = requestBody(t, 1, mcp.MethodDiscover, map[string]any{"_meta": meta})
	unicode := modern(t, 3, mcp.MethodToolsCall, map[string]any{"name": "chärge", "arguments": map[string]any{}})

	tests := []struct {
		name   string
		req    request
		status int
		rpc    int // JSON-RPC error code of the body; 0 is a result
		code   string
	}{
		{"server/discover", discover, 200, 0, ""},
		{"tools/list", modern(t, 4, mcp.MethodToolsList, nil), 200, 0, ""},
		{"ping", modern(t, 5, mcp.MethodPing, nil), 200, 0, ""},
		{"tools/call", charge, 200, 0, ""},
		{"Mcp-Session-Id is ignored", charge.with(mcp.HeaderSessionID, "nope"), 200, 0, ""},
		{"a live session's id is ignored too", charge.with(mcp.HeaderSessionID, legacySID), 200, 0, ""},
		{"Last-Event-ID is ignored", charge.with(mcp.HeaderLastEventID, "7"), 200, 0, ""},
		{"disallowed Origin", charge.with("Origin", "http://evil.example"), 403, 0, errForbiddenOrigin},
		{"GET", request{method: http.MethodGet, h: get("", mcp.Version20260728).h}, 405, 0, errMethodNotAllowed},
		{"DELETE", request{method: http.MethodDelete, h: headers(legacySID, mcp.Version20260728)}, 405, 0, errMethodNotAllowed},
		{"batch", request{method: http.MethodPost, h: discover.h, body: "[" + discover.body + "]"}, 400, mcp.CodeInvalidRequest, ""},
		{"notification", request{method: http.MethodPost, h: discover.h, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`}, 202, 0, ""},
		{"response", request{method: http.MethodPost, h: discover.h, body: responseOnly}, 400, mcp.CodeInvalidRequest, ""},
		{"no MCP-Protocol-Version", discover.without(mcp.HeaderProtocolVersion), 400, mcp.CodeHeaderMismatch, ""},
		{"unsupported version", otherMeta.with(mcp.HeaderProtocolVersion, "2099-01-01"), 400, mcp.CodeUnsupportedProtocolVersion, ""},
		{"a legacy version without initialize", discover.with(mcp.HeaderProtocolVersion, mcp.Version20251125), 400, mcp.CodeUnsupportedProtocolVersion, ""},
		{"no _meta protocol version", noMeta, 400, mcp.CodeHeaderMismatch, ""},
		{"_meta version not the header's", otherMeta, 400, mcp.CodeHeaderMismatch, ""},
		{"no Mcp-Method", discover.without(mcp.HeaderMethod), 400, mcp.CodeHeaderMismatch, ""},
		{"Mcp-Method not the body's", discover.with(mcp.HeaderMethod, mcp.MethodPing), 400, mcp.CodeHeaderMismatch, ""},
		{"Mcp-Method compares case-sensitively", discover.with(mcp.HeaderMethod, "Server/Discover"), 400, mcp.CodeHeaderMismatch, ""},
		{"no Mcp-Name on tools/call", charge.without(mcp.HeaderName), 400, mcp.CodeHeaderMismatch, ""},
		{"Mcp-Name not the body's", charge.with(mcp.HeaderName, mcp.ToolChatty), 400, mcp.CodeHeaderMismatch, ""},
		{"Mcp-Name base64 of the body's", charge.with(mcp.HeaderName, "=?base64?Y2hhcmdl?="), 200, 0, ""},
		{"Mcp-Name broken base64", charge.with(mcp.HeaderName, "=?base64?!!?="), 400, mcp.CodeHeaderMismatch, ""},
		{"Mcp-Name of a name beyond ASCII, encoded", unicode, 200, mcp.CodeInvalidParams, ""},
		{"unknown method", modern(t, 6, "resources/list", nil), 404, mcp.CodeMethodNotFound, ""},
		{"unknown tool", modern(t, 7, mcp.MethodToolsCall, map[string]any{"name": "refund"}), 200, mcp.CodeInvalidParams, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			resp := ts.do(t, ctx, tc.req.method, "", tc.req.h, tc.req.body)
			require.Equal(t, tc.status, resp.StatusCode)
			assert.Empty(t, resp.Header.Get(mcp.HeaderSessionID), "no session id is minted or echoed")
			switch {
			case tc.code != "":
				var body errorBody
				require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
				assert.Equal(t, tc.code, body.Error)
			case tc.status == http.StatusAccepted:
				b, _ := io.ReadAll(resp.Body)
				assert.Empty(t, b)
			case tc.rpc != 0:
				m := resultOf(t, resp)
				require.NotNil(t, m.Error, "a JSON-RPC error")
				assert.Equal(t, tc.rpc, m.Error.Code, m.Error.Message)
			default:
				m := resultOf(t, resp)
				require.Nil(t, m.Error)
				var r struct {
					ResultType string `json:"resultType"`
				}
				require.NoError(t, json.Unmarshal(m.Result, &r))
				assert.Equal(t, mcp.ResultComplete, r.ResultType)
			}
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
			}
		})
	}
}

func TestModernDiscoverAndUnsupportedListVersions(t *testing.T) {
	ts := startServer(t, Config{})
	d := modern(t, 1, mcp.MethodDiscover, nil)
	var res mcp.DiscoverResult
	require.NoError(t, json.Unmarshal(resultOf(t, ts.do(t, context.Background(), d.method, "", d.h, d.body)).Result, &res))
	want := []string{mcp.Version20260728, mcp.Version20251125, mcp.Version20250618, mcp.Version20250326}
	assert.Equal(t, want, res.SupportedVersions)
	assert.JSONEq(t, `{"tools":{}}`, string(res.Capabilities))

	u := d.with(mcp.HeaderProtocolVersion, "1900-01-01")
	resp := ts.do(t, context.Background(), u.method, "", u.h, u.body)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	m := resultOf(t, resp)
	require.NotNil(t, m.Error)
	assert.Equal(t, "1", m.IDString())
	var data mcp.UnsupportedVersionData
	require.NoError(t, json.Unmarshal(m.Error.Data, &data))
	assert.Equal(t, mcp.UnsupportedVersionData{Supported: want, Requested: "1900-01-01"}, data)
}

func TestModernCallStreamsProgressThenResult(t *testing.T) {
	ts := startServer(t, Config{})
	req := modern(t, 9, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolChatty, "arguments": map[string]any{"events": 4, "interval_ms": 1}})
	s := ts.open(t, req.method, req.h, req.body)
	evs := s.rest(t)
	require.Len(t, evs, 5)
	for i, ev := range evs {
		assert.Empty(t, ev.ID, "nothing is resumable at 2026-07-28: no event ids")
		m := decode(t, ev.Data)
		if i < 4 {
			assert.Equal(t, mcp.MethodProgress, m.Method)
			continue
		}
		_, sc := toolResult(t, m)
		assert.Equal(t, float64(4), sc["emitted"])
	}
	assert.Len(t, ts.records(sideeffects.KindEventEmitted, nil), 4)
	written := ts.waitRecord(t, sideeffects.KindResultWritten, forRequest("9"))
	assert.Empty(t, written.Session)
	assert.Equal(t, "modern-1", written.Client)
	finished := ts.waitRecord(t, sideeffects.KindCallFinished, forRequest("9"))
	assert.Equal(t, "ok", finished.Reason)
}

func TestModernCallAnsweredAsJSON(t *testing.T) {
	ts := startServer(t, Config{})
	req := modernCharge(t, 3, map[string]any{"order_id": "j", "amount_cents": 2, "duration_ms": 5}).with("Accept", mcp.ContentTypeJSON)
	resp := ts.do(t, context.Background(), req.method, "", req.h, req.body)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, mcp.ContentTypeJSON, resp.Header.Get("Content-Type"))
	_, sc := toolResult(t, resultOf(t, resp))
	assert.Equal(t, true, sc["charged"])
	charges := ts.records(sideeffects.KindCharge, nil)
	require.Len(t, charges, 1)
	assert.Empty(t, charges[0].Session)
	assert.Equal(t, "modern-1", charges[0].Client)
}

// TestModernCloseIsCancellation holds the 2026-07-28 rule that closing a
// response stream cancels its request, under each on_cancel mode: what is
// recorded, in order, and that no result follows.
func TestModernCloseIsCancellation(t *testing.T) {
	tests := []struct {
		mode     string
		charged  bool
		finished string // call_finished reason
	}{
		{tools.OnCancelStop, false, "cancelled"},
		{tools.OnCancelCommitThenNotice, true, "cancelled"},
		{tools.OnCancelIgnore, true, "result_dropped"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			req := modernCharge(t, 4, map[string]any{"order_id": "c", "amount_cents": 3, "duration_ms": 300})
			for _, accept := range []string{"application/json, text/event-stream", mcp.ContentTypeJSON} {
				srv := startServer(t, Config{OnCancel: tc.mode})
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() {
					defer close(done)
					r := req.with("Accept", accept)
					hr, err := http.NewRequestWithContext(ctx, r.method, srv.base+"/mcp", strings.NewReader(r.body))
					if !assert.NoError(t, err) { // not require: this is not the test's goroutine
						return
					}
					hr.Header = r.h
					if resp, err := client.Do(hr); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
					}
				}()
				srv.waitRecord(t, sideeffects.KindCallStarted, nil)
				cancel()
				<-done
				finished := srv.waitRecord(t, sideeffects.KindCallFinished, nil)
				assert.Equal(t, tc.finished, finished.Reason, accept)
				cancelled := srv.records(sideeffects.KindCallCancelled, nil)
				require.Len(t, cancelled, 1, accept)
				assert.Equal(t, tc.mode, cancelled[0].Reason)
				charges := srv.records(sideeffects.KindCharge, nil)
				if !tc.charged {
					assert.Empty(t, charges, accept)
				} else {
					require.Len(t, charges, 1, accept)
					assert.Greater(t, charges[0].TUS, cancelled[0].TUS, "committed after the server saw the cancellation")
				}
				assert.Empty(t, srv.records(sideeffects.KindResultWritten, nil), "no message after a cancellation")
			}
		})
	}
}

func TestModernKeepalive(t *testing.T) {
	ts := startServer(t, Config{Keepalive: 10 * time.Millisecond})
	req := modernCharge(t, 2, map[string]any{"order_id": "k", "amount_cents": 1, "duration_ms": 200})
	s := ts.open(t, req.method, req.h, req.body)
	br := bufio.NewReader(s.resp.Body)
	comments := 0
	for comments < 3 {
		line, err := br.ReadString('\n')
		require.NoError(t, err)
		if line == ": keepalive\n" {
			comments++
		}
	}
}

// TestModernAndLegacySideBySide: a dual-era server serves both on one
// endpoint, a legacy session unaffected by stateless requests.
func TestModernAndLegacySideBySide(t *testing.T) {
	ts := startServer(t, Config{})
	sid, v := ts.initialize(t, mcp.Version20251125)
	m := modernCharge(t, 2, map[string]any{"order_id": "m", "amount_cents": 1, "duration_ms": 1})
	toolResult(t, resultOf(t, ts.do(t, context.Background(), m.method, "", m.h, m.body)))
	res := resultOf(t, ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "l", "amount_cents": 1, "duration_ms": 1}).resp)
	_, sc := toolResult(t, res)
	assert.Equal(t, "l", sc["order_id"])
	byOrder := map[string]string{}
	for _, r := range ts.records(sideeffects.KindCharge, nil) {
		byOrder[r.OrderID] = r.Session
	}
	assert.Equal(t, map[string]string{"m": "", "l": sid}, byOrder)
}

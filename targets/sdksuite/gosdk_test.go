package sdksuite

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The tests of this file pin what only the go-sdk adapter has: a server
// speaking 2026-07-28 (StreamableHTTPOptions.Stateless), which the mcp-go
// adapter does not drive.

// startGoSDKServer starts the go-sdk server with cfg, writing to a fresh ledger.
func startGoSDKServer(t *testing.T, cfg gosdk.ServerConfig) (*sideeffects.Memory, string) {
	t.Helper()
	l := sideeffects.NewMemory()
	cfg.Recorder = l
	s, err := gosdk.NewServer(cfg)
	require.NoError(t, err)
	return l, mount(t, s)
}

// modernMeta is the per-request _meta of a 2026-07-28 request at version.
func modernMeta(version string) string {
	return fmt.Sprintf(`"_meta":{%q:%q,%q:{"name":"raw","version":"1"},%q:{}}`,
		mcp.MetaProtocolVersion, version, mcp.MetaClientInfo, mcp.MetaClientCapabilities)
}

// modernCharge is a tools/call of charge at 2026-07-28.
func modernCharge(id int, durationMS int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"charge",`+
		`"arguments":{"order_id":"o-%d","amount_cents":1,"duration_ms":%d},%s}}`, id, id, durationMS, modernMeta(mcp.Version20260728))
}

// statelessRequest builds a request to url carrying headers (name, value
// pairs; an empty value leaves the header out).
func statelessRequest(t *testing.T, ctx context.Context, method, url, body string, headers ...string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] != "" {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	return req
}

func modernHeaders(method, name string) []string {
	return []string{mcp.HeaderProtocolVersion, mcp.Version20260728, mcp.HeaderMethod, method, mcp.HeaderName, name}
}

// TestGoSDKStatelessServerAnswers_CurrentBehaviour pins what the go-sdk
// server in stateless mode (how it speaks 2026-07-28) answers: every
// request is served on a session of its own with no Mcp-Session-Id, GET
// and DELETE get 405, a header that does not match the body gets 400 with
// -32020, an unsupported version gets 400 (plain text for one older than
// 2026-07-28, -32022 with the supported list for a newer one), and the
// session revisions are still served, one request at a time: their stream
// opens with a priming event whose id promises a resumption the 405 on GET
// never gives.
func TestGoSDKStatelessServerAnswers_CurrentBehaviour(t *testing.T) {
	_, base := startGoSDKServer(t, gosdk.ServerConfig{Stateless: true})
	hc := newHTTPClient(t)
	url := base + "/mcp"
	tests := []struct {
		name, method, body string
		headers            []string
		status             int
		contentType        string
		contains           []string
	}{
		{"server/discover", http.MethodPost,
			`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta(mcp.Version20260728) + `}}`,
			modernHeaders("server/discover", ""), http.StatusOK, "text/event-stream",
			[]string{`"supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]`, `"resultType":"complete"`}},
		{"tools/call at 2026-07-28", http.MethodPost, modernCharge(2, 1), modernHeaders("tools/call", "charge"),
			http.StatusOK, "text/event-stream", []string{`"charged":true`}},
		{"GET", http.MethodGet, "", modernHeaders("", ""), http.StatusMethodNotAllowed, "text/plain", []string{"Method Not Allowed"}},
		{"DELETE", http.MethodDelete, "", modernHeaders("", ""), http.StatusMethodNotAllowed, "text/plain", []string{"Method Not Allowed"}},
		{"Mcp-Method not the body's", http.MethodPost, modernCharge(3, 1), modernHeaders("tools/list", "charge"),
			http.StatusBadRequest, "application/json", []string{`"code":-32020`, "Mcp-Method header value 'tools/list' does not match body value 'tools/call'"}},
		{"Mcp-Name not the body's", http.MethodPost, modernCharge(4, 1), modernHeaders("tools/call", "chatty"),
			http.StatusBadRequest, "application/json", []string{`"code":-32020`}},
		{"no _meta version at 2026-07-28", http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}}`,
			modernHeaders("tools/list", ""), http.StatusBadRequest, "application/json", []string{`"code":-32602`, "io.modelcontextprotocol/protocolVersion"}},
		{"an unknown older version", http.MethodPost, `{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{}}`,
			[]string{mcp.HeaderProtocolVersion, "2024-01-01"}, http.StatusBadRequest, "text/plain", []string{"Unsupported protocol version"}},
		{"an unknown newer version", http.MethodPost,
			`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{` + modernMeta("2099-01-01") + `}}`,
			[]string{mcp.HeaderProtocolVersion, "2099-01-01", mcp.HeaderMethod, "tools/list"}, http.StatusBadRequest, "application/json",
			[]string{`"code":-32022`, `"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"2099-01-01"`}},
		{"initialize at 2025-11-25", http.MethodPost, rawInitialize, nil, http.StatusOK, "text/event-stream",
			[]string{`"protocolVersion":"2025-11-25"`, "event: prime\nid: "}},
		{"tools/list at 2025-11-25 with no initialize", http.MethodPost, `{"jsonrpc":"2.0","id":8,"method":"tools/list","params":{}}`,
			[]string{mcp.HeaderProtocolVersion, mcp.Version20251125}, http.StatusOK, "text/event-stream", []string{`"name":"charge"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := hc.Do(statelessRequest(t, context.Background(), tc.method, url, tc.body, tc.headers...))
			require.NoError(t, err)
			defer resp.Body.Close()
			b := body(t, resp)
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Type"), tc.contentType)
			assert.Empty(t, resp.Header.Get("Mcp-Session-Id"), "no session at any version")
			if tc.status == http.StatusMethodNotAllowed {
				assert.Equal(t, "POST", resp.Header.Get("Allow"))
			}
			for _, s := range tc.contains {
				assert.Contains(t, b, s)
			}
		})
	}
}

// TestGoSDKStatelessServerStreamClosedMidCall_CurrentBehaviour closes a
// 2026-07-28 call's response stream while the charge runs. The revision
// says the server must take that as cancellation; the go-sdk server with
// its default options (PropagateRequestCancellation off) does not: the
// handler's context lives on, so whatever server.on_cancel says, the tool
// never sees a cancellation (no call_cancelled), the charge lands at its
// time, and its result goes nowhere (recorded result_dropped,
// stream_closed: the host saw the call's connection close first).
func TestGoSDKStatelessServerStreamClosedMidCall_CurrentBehaviour(t *testing.T) {
	for _, mode := range tools.OnCancelModes {
		t.Run(mode, func(t *testing.T) {
			l, base := startGoSDKServer(t, gosdk.ServerConfig{Stateless: true, OnCancel: mode})
			hc := newHTTPClient(t)
			started := l.Next(kindIs(sideeffects.KindCallStarted))
			finished := l.Next(kindIs(sideeffects.KindCallFinished))
			ctx, cut := context.WithCancel(context.Background())
			answered := make(chan error, 1)
			go func() {
				resp, err := hc.Do(statelessRequest(t, ctx, http.MethodPost, base+"/mcp", modernCharge(1, 300), modernHeaders("tools/call", "charge")...))
				if err == nil {
					_, err = resp.Body.Read(make([]byte, 1))
					resp.Body.Close()
				}
				answered <- err
			}()
			await(t, started, "the charge to start")
			cut()
			require.ErrorIs(t, <-answered, context.Canceled)
			cutAt := time.Now()
			await(t, finished, "the charge to finish")
			assert.Zero(t, l.Count(sideeffects.KindCallCancelled), "the SDK never cancels the handler")
			charges := l.Of(sideeffects.KindCharge)
			require.Len(t, charges, 1)
			assert.Equal(t, "raw", charges[0].Client, "the client named in _meta")
			assert.Empty(t, charges[0].Session, "no session at 2026-07-28")
			assert.NotEmpty(t, charges[0].RequestID)
			assert.WithinDuration(t, cutAt, time.Now(), 5*time.Second)
			assert.Zero(t, l.Count(sideeffects.KindResultWritten))
			dropped := l.Of(sideeffects.KindResultDropped)
			require.Len(t, dropped, 1, "the connection closed before the result: it goes nowhere")
			assert.Equal(t, "stream_closed", dropped[0].Reason)
			fin := l.Of(sideeffects.KindCallFinished)
			require.Len(t, fin, 1)
			assert.Equal(t, "ok", fin[0].Reason)
			assert.Zero(t, l.Count(sideeffects.KindSessionOpened), "no session is recorded")
		})
	}
}

package server

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// TestGoSDKClientInterop runs the official MCP Go SDK client, which nobody
// here wrote, against the server.
func TestGoSDKClientInterop(t *testing.T) {
	ts := startServer(t, Config{Retry: 100 * time.Millisecond})
	tests := []struct{ name, asked, want string }{
		// The SDK first tries server/discover (2026-07-28), which the server
		// answers: the SDK stays stateless.
		{"sdk default", "", mcp.Version20260728},
		{"2025-03-26", mcp.Version20250326, mcp.Version20250326},
		{"2025-06-18", mcp.Version20250618, mcp.Version20250618},
		{"2025-11-25", mcp.Version20251125, mcp.Version20251125},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			var mu sync.Mutex
			var progress []float64
			c := sdk.NewClient(&sdk.Implementation{Name: "sdk-" + tc.name, Version: "1"}, &sdk.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
					mu.Lock()
					defer mu.Unlock()
					progress = append(progress, req.Params.Progress)
				},
			})
			var opts *sdk.ClientSessionOptions
			if tc.asked != "" {
				opts = &sdk.ClientSessionOptions{ProtocolVersion: tc.asked}
			}
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.base + "/mcp", HTTPClient: client, MaxRetries: 2}, opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, cs.InitializeResult().ProtocolVersion)
			sid := cs.ID()

			tools, err := cs.ListTools(ctx, nil)
			require.NoError(t, err)
			require.Len(t, tools.Tools, 2)

			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolChatty,
				Arguments: map[string]any{"events": 5, "interval_ms": 1}, Meta: sdk.Meta{"progressToken": "p-" + tc.name}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			assert.JSONEq(t, `{"emitted":5}`, mustJSON(t, res.StructuredContent))
			require.Eventually(t, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(progress) == 5
			}, testTimeout, time.Millisecond)
			assert.Equal(t, []float64{1, 2, 3, 4, 5}, progress)

			order := "sdk-order-" + tc.name
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolCharge,
				Arguments: map[string]any{"order_id": order, "amount_cents": 1234, "duration_ms": 20}})
			require.NoError(t, err)
			require.False(t, res.IsError)
			assert.JSONEq(t, `{"charged":true,"order_id":"`+order+`","amount_cents":1234}`, mustJSON(t, res.StructuredContent))
			charges := ts.records(sideeffects.KindCharge, func(r sideeffects.Record) bool { return r.OrderID == order })
			require.Len(t, charges, 1)
			assert.Equal(t, sid, charges[0].Session)
			assert.Equal(t, "sdk-"+tc.name, charges[0].Client)

			require.NoError(t, cs.Close())
			if tc.want == mcp.Version20260728 {
				assert.Empty(t, sid, "no session at 2026-07-28")
				return
			}
			closed := ts.waitRecord(t, sideeffects.KindSessionClosed, func(r sideeffects.Record) bool { return r.Session == sid })
			assert.Equal(t, reasonDeleted, closed.Reason, "the SDK deletes its session on Close")
		})
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestGoSDKClientResumesAcrossRestart restarts a file-store server in place
// while the SDK client waits for a charge: the SDK reconnects with
// Last-Event-ID after the server's retry delay and gets the original result.
func TestGoSDKClientResumesAcrossRestart(t *testing.T) {
	cfg := fileConfig(t)
	cfg.Retry = 300 * time.Millisecond
	ts := startServer(t, cfg).withLedger(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-restart", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: ts.base + "/mcp", HTTPClient: client, MaxRetries: 3},
		&sdk.ClientSessionOptions{ProtocolVersion: mcp.Version20251125})
	require.NoError(t, err)
	defer cs.Close()

	type answer struct {
		res *sdk.CallToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolCharge,
			Arguments: map[string]any{"order_id": "deploy", "amount_cents": 700, "duration_ms": 100}})
		got <- answer{res, err}
	}()
	ts.waitRecord(t, sideeffects.KindCallStarted, nil)
	require.NoError(t, ts.Shutdown(ctx), "a graceful deploy: the charge drains into the log")
	startServerAt(t, cfg, ts.base[len("http://"):])

	a := <-got
	require.NoError(t, a.err)
	require.False(t, a.res.IsError)
	assert.JSONEq(t, `{"charged":true,"order_id":"deploy","amount_cents":700}`, mustJSON(t, a.res.StructuredContent))
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), 1)
}

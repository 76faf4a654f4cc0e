package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/server"
)

// TestGoSDKClientUnderRepeatedCuts pins what the official go-sdk v1.8.0
// client does with a long charge whose connection is cut again and again
// (an LB idle timeout), at each era. At 2025-11-25 it resumes with
// Last-Event-ID every time (each resumed stream starts with a priming
// event, so even a stream cut before any event leaves it a cursor) and
// gets the one charge's result. At 2026-07-28 the first cut closes the
// call's stream, which cancels it: there is nothing to resume, the call
// fails, and the server (on_cancel stop) never charges.
func TestGoSDKClientUnderRepeatedCuts(t *testing.T) {
	tests := []struct {
		protocol string
		ok       bool
		charges  int
	}{
		{mcpwire.Version20251125, true, 1},
		{mcpwire.Version20260728, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.protocol, func(t *testing.T) {
			e := newEnv(t, server.Config{Retry: 20 * time.Millisecond})
			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()
			c := sdk.NewClient(&sdk.Implementation{Name: "sdk-cuts", Version: "1"}, nil)
			hc := &http.Client{Transport: &http.Transport{Proxy: nil}}
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.endpoint(), HTTPClient: hc, MaxRetries: 10},
				&sdk.ClientSessionOptions{ProtocolVersion: tc.protocol})
			require.NoError(t, err)
			defer cs.Close()
			assert.Equal(t, tc.protocol, cs.InitializeResult().ProtocolVersion)

			type answer struct {
				res *sdk.CallToolResult
				err error
			}
			got := make(chan answer, 1)
			go func() {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcpwire.ToolCharge,
					Arguments: map[string]any{"order_id": "long", "amount_cents": 700, "duration_ms": 600}})
				got <- answer{res, err}
			}()
			require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCallStarted, nil) == 1 }, runTimeout, time.Millisecond)
			var a answer
			for cuts := 0; ; cuts++ {
				select {
				case a = <-got:
				case <-time.After(150 * time.Millisecond):
					if cuts < 3 {
						e.cut()
					}
					continue
				}
				break
			}
			if tc.ok {
				require.NoError(t, a.err)
				assert.False(t, a.res.IsError)
			} else {
				require.Error(t, a.err, "the cut cancelled the call")
				t.Logf("go-sdk at %s: %v", tc.protocol, a.err)
			}
			time.Sleep(700 * time.Millisecond) // past the charge's time: a charge that was coming has come
			assert.Equal(t, tc.charges, e.ledgerCount(sideeffects.KindCharge, nil))
		})
	}
}

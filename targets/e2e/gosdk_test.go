package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/wire/mcp"
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
		{mcp.Version20251125, true, 1},
		{mcp.Version20260728, false, 0},
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
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolCharge,
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

// TestGoSDKClientUnderRepeatedIdleTimeouts runs the official go-sdk v1.8.0
// client through a load balancer's idle timeout (chaosrun's idle_timeout
// toxic: any connection with no byte from the server for 300 ms is closed)
// with a 2 s charge, the incident's shape. At 2025-11-25 the call's
// stream idles and is cut again and again; the SDK resumes with
// Last-Event-ID each time and completes the call, charged once. At
// 2026-07-28 a cut is a cancellation, so the call completes only if the
// stream never idles: with the server's keepalive comments every 40 ms it
// does, charged once, the timeout never biting; without them the first
// cut cancels it, no charge, the call failed.
func TestGoSDKClientUnderRepeatedIdleTimeouts(t *testing.T) {
	tests := []struct {
		name      string
		protocol  string
		keepalive time.Duration
		ok        bool
		charges   int
		resumed   bool // the SDK came back with Last-Event-ID at least twice
	}{
		{"2025-11-25 resumes after every cut", mcp.Version20251125, 0, true, 1, true},
		{"2026-07-28 with keepalive never idles", mcp.Version20260728, 40 * time.Millisecond, true, 1, false},
		{"2026-07-28 without keepalive is cancelled", mcp.Version20260728, 0, false, 0, false},
	}
	toxics.Register()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, server.Config{Retry: 20 * time.Millisecond, Keepalive: tc.keepalive})
			body, err := json.Marshal(map[string]any{"name": "lb-idle", "type": toxics.TypeIdleTimeout, "stream": "downstream",
				"toxicity": 1, "attributes": map[string]any{"idle": 300}})
			require.NoError(t, err)
			_, err = e.proxy.Toxics.AddToxicJson(bytes.NewReader(body))
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
			defer cancel()
			c := sdk.NewClient(&sdk.Implementation{Name: "sdk-idle", Version: "1"}, nil)
			resumes := &countResumes{next: &http.Transport{Proxy: nil}}
			cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: e.endpoint(), HTTPClient: &http.Client{Transport: resumes}, MaxRetries: 20},
				&sdk.ClientSessionOptions{ProtocolVersion: tc.protocol})
			require.NoError(t, err)
			defer cs.Close()

			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolCharge,
				Arguments: map[string]any{"order_id": "long", "amount_cents": 700, "duration_ms": 2000}})
			if tc.ok {
				require.NoError(t, err)
				assert.False(t, res.IsError)
			} else {
				require.Error(t, err, "the idle cut cancelled the call")
				// past the charge's time: a charge that was coming has come
				require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCallFinished, nil) == 1 }, runTimeout, time.Millisecond)
			}
			assert.Equal(t, tc.charges, e.ledgerCount(sideeffects.KindCharge, nil))
			if tc.resumed {
				assert.GreaterOrEqual(t, resumes.n.Load(), int64(2), "the stream was cut and resumed more than once")
			} else {
				assert.Zero(t, resumes.n.Load(), "nothing to resume")
			}
		})
	}
}

// countResumes counts the requests that carry Last-Event-ID: the SDK's
// resumptions of a cut stream.
type countResumes struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (c *countResumes) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get(mcp.HeaderLastEventID) != "" {
		c.n.Add(1)
	}
	return c.next.RoundTrip(req)
}

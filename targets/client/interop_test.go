package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// sdkCharge and sdkChatty mirror mcp.ChargeArgs and mcp.ChattyArgs, so the
// go-sdk server sees the same argument shapes as the reference server.
type sdkCharge struct {
	OrderID        string `json:"order_id"`
	AmountCents    int64  `json:"amount_cents"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	DurationMS     int64  `json:"duration_ms,omitempty"`
}

type sdkChatty struct {
	Events     int   `json:"events"`
	IntervalMS int64 `json:"interval_ms,omitempty"`
}

type sdkOut struct {
	OrderID string `json:"order_id,omitempty"`
	Emitted int    `json:"emitted,omitempty"`
}

// sdkServer is the official go-sdk's Streamable HTTP server with an event
// store and the two tools, behind a Toxiproxy proxy that can cut every
// connection.
type sdkServer struct {
	charges atomic.Int64
	proxy   *toxiproxy.Proxy
	url     string
	mu      sync.Mutex
	resumes []string // Last-Event-ID of every GET
}

func newSDKServer(t *testing.T) *sdkServer {
	s := &sdkServer{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "go-sdk", Version: "v1.8.0"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: mcp.ToolCharge, Description: "charge a card"}, s.charge)
	sdk.AddTool(srv, &sdk.Tool{Name: mcp.ToolChatty, Description: "emit progress"}, chattyTool)
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			s.mu.Lock()
			s.resumes = append(s.resumes, r.Header.Get(mcp.HeaderLastEventID))
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)

	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	u, err := url.Parse(hs.URL)
	require.NoError(t, err)
	s.proxy = toxiproxy.NewProxy(api, "sdk", "127.0.0.1:0", u.Host)
	require.NoError(t, s.proxy.Start())
	t.Cleanup(s.proxy.Stop)
	s.url = "http://" + s.proxy.Listen + "/mcp"
	return s
}

func (s *sdkServer) charge(ctx context.Context, _ *sdk.CallToolRequest, in sdkCharge) (*sdk.CallToolResult, sdkOut, error) {
	select {
	case <-ctx.Done():
		return nil, sdkOut{}, ctx.Err()
	case <-time.After(time.Duration(in.DurationMS) * time.Millisecond):
	}
	s.charges.Add(1)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "charged " + in.OrderID}}}, sdkOut{OrderID: in.OrderID}, nil
}

func chattyTool(ctx context.Context, req *sdk.CallToolRequest, in sdkChatty) (*sdk.CallToolResult, sdkOut, error) {
	for i := 1; i <= in.Events; i++ {
		err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
			ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: float64(in.Events),
		})
		if err != nil {
			return nil, sdkOut{}, err
		}
		time.Sleep(time.Duration(in.IntervalMS) * time.Millisecond)
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, sdkOut{Emitted: in.Events}, nil
}

// cut closes every connection through the proxy and accepts new ones again.
func (s *sdkServer) cut(t *testing.T) {
	s.proxy.Stop()
	require.NoError(t, s.proxy.Start())
}

func TestInteropGoSDKServer(t *testing.T) {
	s := newSDKServer(t)
	g := newRig(s.url)
	require.NoError(t, runClient(t, TargetResumable, g, charge("c1-1"), chatty("c1-2", 5)))

	recs := g.history(t)
	okRecs := kinds(recs, history.KindOK)
	require.Len(t, okRecs, 2, "history:\n%s", g.buf.bytes())
	assert.Equal(t, int64(1), s.charges.Load())
	var seqs []int64
	for _, e := range kinds(recs, history.KindEvent) {
		if e.Call == "c1-2" && e.Detail == mcp.MethodProgress {
			seqs = append(seqs, e.Seq)
		}
	}
	assert.Equal(t, []int64{1, 2, 3, 4, 5}, seqs)
	sessions := kinds(recs, history.KindSessionNew)
	require.Len(t, sessions, 1)
	assert.Equal(t, mcp.LatestVersion, sessions[0].Protocol)
}

func TestInteropGoSDKServerResumesAfterCut(t *testing.T) {
	s := newSDKServer(t)
	g := newRig(s.url)
	g.opts.Backoff = workload.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond, Retries: 8}
	call := charge("c1-1")
	call.Duration = 400 * time.Millisecond

	done := make(chan error, 1)
	go func() { done <- runClient(t, TargetResumable, g, call) }()
	require.Eventually(t, func() bool {
		return len(kinds(g.history(t), history.KindEvent)) > 0
	}, 5*time.Second, time.Millisecond, "the priming event never arrived")
	s.cut(t)
	require.NoError(t, <-done)

	recs := g.history(t)
	require.Len(t, kinds(recs, history.KindStreamBreak), 1, "history:\n%s", g.buf.bytes())
	require.NotEmpty(t, kinds(recs, history.KindResume))
	okRecs := kinds(recs, history.KindOK)
	require.Len(t, okRecs, 1, "history:\n%s", g.buf.bytes())
	assert.Len(t, kinds(recs, history.KindInvoke), 1)
	assert.Equal(t, int64(1), s.charges.Load(), "one charge despite the cut")
	s.mu.Lock()
	defer s.mu.Unlock()
	require.NotEmpty(t, s.resumes)
	stream, n, ok := strings.Cut(s.resumes[0], "_")
	assert.True(t, ok && stream != "", "go-sdk event ids are <stream>_<n>: %q", s.resumes[0])
	assert.Equal(t, n, strconv.FormatInt(kinds(recs, history.KindReconnect)[0].LastEventID, 10))
}

package server

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// A benchmark target is a server under comparison, started fresh.
type benchTarget struct {
	name  string
	start func(b *testing.B) (url string, stop func())
}

func benchTargets() []benchTarget {
	return []benchTarget{
		{"reference", func(b *testing.B) (string, func()) { return startReference(b, Config{Recorder: discard{}}) }},
		{"reference-file-store", func(b *testing.B) (string, func()) {
			return startReference(b, Config{Recorder: discard{}, EventStore: EventStoreFile, StorePath: filepath.Join(b.TempDir(), "events.jsonl")})
		}},
		{"go-sdk", startGoSDK},
	}
}

func startReference(b *testing.B, cfg Config) (string, func()) {
	srv, err := New(cfg)
	require.NoError(b, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = srv.Close() }
}

// startGoSDK serves the official SDK's StreamableHTTPHandler with its
// memory EventStore and a chatty tool equivalent to the reference one.
func startGoSDK(b *testing.B) (string, func()) {
	server := sdk.NewServer(&sdk.Implementation{Name: "go-sdk", Version: "1"}, nil)
	type emitted struct {
		Emitted int `json:"emitted"`
	}
	sdk.AddTool(server, &sdk.Tool{Name: mcp.ToolChatty, Description: "emits numbered progress notifications"},
		func(ctx context.Context, req *sdk.CallToolRequest, args mcp.ChattyArgs) (*sdk.CallToolResult, emitted, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= args.Events; i++ {
				if runclock.Sleep(ctx, time.Duration(args.IntervalMS)*time.Millisecond) != nil {
					return nil, emitted{}, ctx.Err()
				}
				if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{
					ProgressToken: token, Progress: float64(i), Total: float64(args.Events)}); err != nil {
					return nil, emitted{}, err
				}
			}
			return nil, emitted{Emitted: args.Events}, nil
		})
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	hs := &http.Server{Handler: handler}
	go func() { _ = hs.Serve(ln) }()
	return "http://" + ln.Addr().String() + "/mcp", func() { _ = hs.Close() }
}

// rawSession is one session driven by plain HTTP, the same for both servers.
type rawSession struct {
	url, sid string
}

func rawPost(b *testing.B, url, sid, body string) *http.Response {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(b, err)
	req.Header = headers(sid, "")
	if sid != "" {
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.Version20251125)
	}
	resp, err := client.Do(req)
	require.NoError(b, err)
	return resp
}

func rawInitialize(b *testing.B, url string) rawSession {
	resp := rawPost(b, url, "", initBody(b, mcp.Version20251125, "bench"))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode)
	s := rawSession{url: url, sid: resp.Header.Get(mcp.HeaderSessionID)}
	ack := rawPost(b, url, s.sid, initialized)
	ack.Body.Close()
	require.Equal(b, http.StatusAccepted, ack.StatusCode)
	return s
}

func (s rawSession) delete(b *testing.B) {
	req, err := http.NewRequest(http.MethodDelete, s.url, nil)
	require.NoError(b, err)
	req.Header = headers(s.sid, mcp.Version20251125)
	resp, err := client.Do(req)
	require.NoError(b, err)
	resp.Body.Close()
}

// chatty makes one chatty call and returns how many progress events arrived.
func (s rawSession) chatty(b *testing.B, id, events int) int {
	resp := rawPost(b, s.url, s.sid, requestBody(b, id, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolChatty,
		"arguments": map[string]any{"events": events}, "_meta": map[string]any{"progressToken": id}}))
	defer resp.Body.Close()
	require.Equal(b, http.StatusOK, resp.StatusCode)
	r := mcp.NewEventReader(resp.Body)
	n := 0
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(b, err)
		if strings.Contains(string(ev.Data), mcp.MethodProgress) {
			n++
		}
		if strings.Contains(string(ev.Data), `"result"`) {
			break
		}
	}
	require.Equal(b, events, n)
	return n
}

// BenchmarkSSEThroughput measures progress events per second delivered over
// one SSE stream: each op is one chatty call of 1,000 events, no interval.
func BenchmarkSSEThroughput(b *testing.B) {
	const events = 1000
	for _, target := range benchTargets() {
		b.Run(target.name, func(b *testing.B) {
			url, stop := target.start(b)
			defer stop()
			s := rawInitialize(b, url)
			b.ReportAllocs()
			total := 0
			id := 1
			for b.Loop() {
				id++
				total += s.chatty(b, id, events)
			}
			b.ReportMetric(float64(total)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// BenchmarkIdleSessionHeap measures the heap (and goroutine stacks) that
// 1,000 initialized, idle sessions cost a server; each op starts a fresh
// server, opens the sessions, and measures after two GCs.
func BenchmarkIdleSessionHeap(b *testing.B) {
	const sessions = 1000
	reference := func(b *testing.B) (string, func()) { return startReference(b, Config{Recorder: discard{}}) }
	for _, target := range []benchTarget{{"reference", reference}, {"go-sdk", startGoSDK}} {
		b.Run(target.name, func(b *testing.B) { idleSessionHeap(b, target, sessions) })
	}
}

func idleSessionHeap(b *testing.B, target benchTarget, sessions int) {
	var heap, stack, goroutines float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		url, stop := target.start(b)
		h0, s0, g0 := memory()
		b.StartTimer()
		opened := make([]rawSession, sessions)
		for j := range opened {
			opened[j] = rawInitialize(b, url)
		}
		b.StopTimer()
		h1, s1, g1 := memory()
		heap += float64(h1-h0) / float64(sessions)
		stack += float64(s1-s0) / float64(sessions)
		goroutines += float64(g1-g0) / float64(sessions)
		for _, s := range opened {
			s.delete(b)
		}
		stop()
		client.CloseIdleConnections()
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(heap/n, "heap-B/session")
	b.ReportMetric(stack/n, "stack-B/session")
	b.ReportMetric(goroutines/n, "goroutines/session")
}

func memory() (heap, stack int64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse), runtime.NumGoroutine()
}

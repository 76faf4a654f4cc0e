package observer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chaosrun/chaosrun/wire"
)

type discard struct{}

func (discard) record(*wire.Record) {}

// BenchmarkParseEvent measures the response parser on a chunked SSE stream
// of small progress notifications, per event.
func BenchmarkParseEvent(b *testing.B) {
	var stream strings.Builder
	const perChunk = 64
	for i := range perChunk {
		ev := fmt.Sprintf("id: %d\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":\"c1-1\",\"progress\":%d,\"total\":1000}}\n\n", i+1, i+1)
		fmt.Fprintf(&stream, "%x\r\n%s\r\n", len(ev), ev)
	}
	chunk := []byte(stream.String())
	p := newResponseParser(discard{}, &pairing{})
	p.feed([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
	b.ReportAllocs()
	b.SetBytes(int64(len(chunk)) / perChunk)
	for b.Loop() {
		p.feed(chunk)
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perChunk), "ns/event")
}

var benchEvent = []byte(`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1-1","progress":5,"total":1000}}`)

// BenchmarkEventMessage reads one progress notification by the fast path
// and by package mcp's (the slow path).
func BenchmarkEventMessage(b *testing.B) {
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		var m wire.Message
		var nums [2]float64
		var in interner
		for b.Loop() {
			m = wire.Message{}
			if !fastMessage(benchEvent, &m, &nums, &in) {
				b.Fatal("the fast path gave up")
			}
		}
	})
	b.Run("mcp", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = slowMessage(benchEvent)
		}
	})
}

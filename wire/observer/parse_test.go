package observer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire"
)

// records is a recorder that keeps what it is given.
type records []wire.Record

func (r *records) record(x *wire.Record) { *r = append(*r, *Clone(x)) }

// chunks cuts b at random places (none when seed is 0).
func chunks(b []byte, seed uint64) [][]byte {
	if seed == 0 {
		return [][]byte{b}
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	var out [][]byte
	for len(b) > 0 {
		n := 1 + rng.IntN(min(len(b), 64))
		out = append(out, b[:n])
		b = b[n:]
	}
	return out
}

func parseRequests(in string, seed uint64) (records, *requestParser) {
	var got records
	p := newRequestParser(&got, &pairing{})
	for _, c := range chunks([]byte(in), seed) {
		p.feed(c)
	}
	p.end()
	return got, p
}

// parseResponses parses responses to requests with the given methods (by
// request number from 1; a missing one is not HEAD or CONNECT).
func parseResponses(in string, seed uint64, methods map[int64]string) (records, *responseParser) {
	var got records
	pair := &pairing{}
	for x, m := range methods {
		pair.header(x, m)
	}
	p := newResponseParser(&got, pair)
	for _, c := range chunks([]byte(in), seed) {
		p.feed(c)
	}
	p.end()
	return got, p
}

func chunkedBody(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(p), p)
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func postBody(header, body string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: x\r\n%sContent-Length: %d\r\n\r\n%s", header, len(body), body)
}

func digest(t *testing.T, args string) string {
	t.Helper()
	d, err := wire.ArgsDigest([]byte(args))
	require.NoError(t, err)
	return d
}

func float(v float64) *float64 { return &v }

func TestRequests(t *testing.T) {
	const (
		args     = `{"order_id":"c1-1", "amount_cents":4999}`
		initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c1","version":"1"}}}`
		callBody = `{"jsonrpc":"2.0","id":"a-2","method":"tools/call","params":{"name":"charge","arguments":` + args + `,"_meta":{"progressToken":"a-2"}}}`
		batch1   = `[{"jsonrpc":"2.0","method":"notifications/initialized"},`
		batch2   = `{"jsonrpc":"2.0","id":3,"method":"notifications/cancelled"},` +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"x"}}]`
		badBatch = `[{"jsonrpc":"2.0","method":"ping","id":1},{"jsonrpc":"1.0"}]`
		meta     = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hello","arguments":{},"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"ExampleClient","version":"1"},` +
			`"io.modelcontextprotocol/clientCapabilities":{},"progressToken":12}}}`
		taskGet  = `{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"t-1"}}`
		discover = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{` +
			`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"c2","version":"1"}}}}`
		badName = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}`
	)
	size := func(s string) int64 { return int64(len(s)) }
	tests := []struct {
		name string
		in   string
		want []wire.Record
	}{
		{
			name: "initialize",
			in:   postBody("content-type: application/json\r\nACCEPT: application/json, text/event-stream\r\nOrigin: http://x\r\n", initBody),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(initBody),
				Header:   &wire.Header{ContentType: "application/json", Accept: "application/json, text/event-stream", Origin: "http://x"},
				Messages: []wire.Message{{ID: "1", Method: "initialize", ClientName: "c1", Protocol: "2025-11-25"}}}},
		},
		{
			name: "tools/call with a progress token, keep-alive GET and DELETE",
			in: postBody("Mcp-Session-Id: s1\r\nMCP-Protocol-Version: 2025-11-25\r\n", callBody) +
				"GET /mcp HTTP/1.1\r\nmcp-session-id: s1\r\nlast-event-id: 7\r\n\r\n" +
				"DELETE /mcp?x=1 HTTP/1.1\r\nMcp-Session-Id: s1\r\n\r\n",
			want: []wire.Record{
				{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(callBody),
					Header: &wire.Header{SessionID: "s1", ProtocolVersion: "2025-11-25"},
					Messages: []wire.Message{{ID: "a-2", Method: "tools/call", Tool: "charge", Args: json.RawMessage(args),
						ArgsDigest: digest(t, `{"amount_cents":4999,"order_id":"c1-1"}`), ProgressToken: "a-2"}}},
				{Kind: wire.KindRequest, Exchange: 2, Method: "GET", Path: "/mcp", Header: &wire.Header{SessionID: "s1", LastEventID: "7"}},
				{Kind: wire.KindRequest, Exchange: 3, Method: "DELETE", Path: "/mcp?x=1", Header: &wire.Header{SessionID: "s1"}},
			},
		},
		{
			name: "2025-03-26 batch, chunked",
			in:   "POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n" + chunkedBody(batch1, batch2),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(batch1 + batch2),
				Messages: []wire.Message{
					{Method: "notifications/initialized"},
					{ID: "3", Method: "notifications/cancelled"},
					{Method: "notifications/cancelled", RequestID: "2"},
				}}},
		},
		{
			name: "batch with an invalid element",
			in:   postBody("", badBatch),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(badBatch),
				Messages: []wire.Message{{ID: "1", Method: "ping"}, {Problem: `invalid JSON-RPC message: jsonrpc must be "2.0"`}}}},
		},
		{
			name: "2026-07-28 request with _meta and the request headers",
			in:   postBody("Mcp-Method: tools/call\r\nMcp-Name: hello\r\nMCP-Protocol-Version: 2026-07-28\r\n", meta),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(meta),
				Header: &wire.Header{MCPMethod: "tools/call", MCPName: "hello", ProtocolVersion: "2026-07-28"},
				Messages: []wire.Message{{ID: "5", Method: "tools/call", Tool: "hello", Args: json.RawMessage(`{}`), ArgsDigest: digest(t, `{}`),
					ClientName: "ExampleClient", Protocol: "2026-07-28", ProgressToken: "12"}}}},
		},
		{
			name: "2026-07-28 server/discover",
			in:   postBody("Mcp-Method: server/discover\r\nMCP-Protocol-Version: 2026-07-28\r\n", discover),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(discover),
				Header:   &wire.Header{MCPMethod: "server/discover", ProtocolVersion: "2026-07-28"},
				Messages: []wire.Message{{ID: "1", Method: "server/discover", ClientName: "c2", Protocol: "2026-07-28"}}}},
		},
		{
			name: "tasks/get",
			in:   postBody("", taskGet),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(taskGet),
				Messages: []wire.Message{{ID: "6", Method: "tasks/get", TaskID: "t-1"}}}},
		},
		{
			name: "a body that is not JSON",
			in:   postBody("", `hello`),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: 5,
				Messages: []wire.Message{{Problem: "invalid JSON-RPC message: invalid character 'h' looking for beginning of value"}}}},
		},
		{
			name: "a tools/call with wrongly typed params",
			in:   postBody("", badName),
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: size(badName),
				Messages: []wire.Message{{ID: "1", Method: "tools/call", Problem: "params.name: json: cannot unmarshal number into Go value of type string"}}}},
		},
		{
			name: "body cut by the end",
			in:   "POST /mcp HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\"",
			want: []wire.Record{{Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp", Size: 10,
				Problem: "body cut by the connection's end after 10 bytes, 90 short"}},
		},
		{
			name: "header cut by the end",
			in:   "GET /mcp HTTP/1.1\r\nAcc",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: 22, Problem: "request cut by the connection's end"}},
		},
		{
			name: "non-HTTP bytes",
			in:   "\x16\x03\x01\x02\x00",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: 1, Problem: `not an HTTP/1.x request: byte '\x16' at 0 of the request line`}},
		},
		{
			name: "text that is not HTTP after a request",
			in:   "GET / HTTP/1.1\r\n\r\nhello world\r\nmore",
			want: []wire.Record{
				{Kind: wire.KindRequest, Exchange: 1, Method: "GET", Path: "/"},
				{Kind: wire.KindMalformed, Exchange: 2, Size: 13, Problem: `not an HTTP/1.x request line: "hello world"`},
			},
		},
		{
			name: "HTTP/2 preface",
			in:   "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x12\x04",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: 16, Problem: "HTTP/2 connection preface: not read"}},
		},
		{
			name: "header section over the bound",
			in:   "GET / HTTP/1.1\r\nX-Big: " + strings.Repeat("a", MaxHeaderBytes) + "\r\n\r\nGET / HTTP/1.1\r\n\r\n",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: MaxHeaderBytes + 1, Problem: "header section over 65536 bytes"}},
		},
		{
			name: "conflicting Content-Length",
			in:   "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: 55, Problem: `bad Content-Length: "2"`}},
		},
		{
			name: "bad chunk size",
			in:   "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
			want: []wire.Record{{Kind: wire.KindMalformed, Exchange: 1, Size: 51, Problem: `bad chunk-size line: "zz"`}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(4) {
				got, p := parseRequests(tc.in, seed)
				assert.Equal(t, tc.want, []wire.Record(got), "chunking %d", seed)
				assert.Equal(t, int64(len(tc.in)), p.read+p.unread)
			}
		})
	}
}

func TestResponses(t *testing.T) {
	sse := "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nMcp-Session-Id: s1\r\nTransfer-Encoding: chunked\r\n\r\n"
	sseHeader := &wire.Header{ContentType: "text/event-stream", SessionID: "s1"}
	const (
		progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a-2","progress":2,"total":5,"message":"x"}}`
		notFound = `{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"no method"}}`
		task2026 = `{"jsonrpc":"2.0","id":4,"result":{"resultType":"task","taskId":"t-9","status":"working"}}`
		task2025 = `{"jsonrpc":"2.0","id":5,"result":{"task":{"taskId":"t-8","status":"completed","ttl":100}}}`
		complete = `{"jsonrpc":"2.0","id":6,"result":{"resultType":"complete","content":[]}}`
		related  = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a-2","progress":1,` +
			`"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-8"}}}}`
		relatedResult = `{"jsonrpc":"2.0","id":7,"result":{"content":[],"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t-8"}}}}`
	)
	events := []string{"id: 1\r\nretry: 1500\r\ndata:\r\n\r\n", ": keepalive\n\n", "id: 2\ndata: " + progress + "\n\n",
		"id: 3\rdata: {\"jsonrpc\":\"2.0\",\"id\":\"a-2\",\r",
		"data: \"result\":{\"content\":[],\"isError\":true}}\r\r",
		"event: close\ndata: {\"reason\":\"bye\"}\n\n"}
	taskEvents := []string{"data: " + task2026 + "\n\n", "data: " + task2025 + "\n\n", "data: " + complete + "\n\n",
		"data: " + related + "\n\n", "data: " + relatedResult + "\n\n"}
	total := func(parts []string) int64 { return int64(len(strings.Join(parts, ""))) }
	tests := []struct {
		name    string
		in      string
		methods map[int64]string
		want    []wire.Record
	}{
		{
			name: "initialize result, then 202",
			in: "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nMcp-Session-Id: s1\r\nContent-Length: 73\r\n\r\n" +
				`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","a":1}}` + "\n" +
				"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n",
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200, Size: 73,
					Header:   &wire.Header{ContentType: "application/json; charset=utf-8", SessionID: "s1"},
					Messages: []wire.Message{{ID: "1", Response: true, Protocol: "2025-06-18"}}},
				{Kind: wire.KindResponse, Exchange: 2, Status: 202},
			},
		},
		{
			name: "SSE stream: priming, comment, progress, result, close event",
			in:   sse + chunkedBody(events...),
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200, Header: sseHeader},
				{Kind: wire.KindEvent, Exchange: 1, EventID: "1", RetryMS: 1500, Priming: true},
				{Kind: wire.KindComment, Exchange: 1, Size: 11},
				{Kind: wire.KindEvent, Exchange: 1, EventID: "2", Size: int64(len(progress)),
					Messages: []wire.Message{{Method: "notifications/progress", ProgressToken: "a-2", Progress: float(2), Total: float(5)}}},
				{Kind: wire.KindEvent, Exchange: 1, EventID: "3", Size: 68,
					Messages: []wire.Message{{ID: "a-2", Response: true, IsError: true}}},
				{Kind: wire.KindEvent, Exchange: 1, EventType: "close", Size: 16},
				{Kind: wire.KindBodyEnd, Exchange: 1, Size: total(events)},
			},
		},
		{
			name: "JSON-RPC error with a 404",
			in:   "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 73\r\n\r\n" + notFound,
			want: []wire.Record{{Kind: wire.KindResponse, Exchange: 1, Status: 404, Size: 73, Header: &wire.Header{ContentType: "application/json"},
				ErrorBody: notFound,
				Messages:  []wire.Message{{Response: true, IsError: true, ErrorCode: -32601, ErrorMessage: "no method"}}}},
		},
		{
			name: "410 with a plain body, close-delimited",
			in:   "HTTP/1.1 410 Gone\r\nContent-Type: text/plain\r\n\r\nevents evicted",
			want: []wire.Record{{Kind: wire.KindResponse, Exchange: 1, Status: 410, Size: 14, Header: &wire.Header{ContentType: "text/plain"},
				ErrorBody: "events evicted"}},
		},
		{
			name: "tasks: 2026 resultType task, 2025-11-25 result.task and related-task _meta",
			in:   sse + chunkedBody(taskEvents...),
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200, Header: sseHeader},
				{Kind: wire.KindEvent, Exchange: 1, Size: int64(len(task2026)), Messages: []wire.Message{{ID: "4", Response: true, ResultType: "task", TaskID: "t-9", TaskStatus: "working"}}},
				{Kind: wire.KindEvent, Exchange: 1, Size: int64(len(task2025)), Messages: []wire.Message{{ID: "5", Response: true, TaskID: "t-8", TaskStatus: "completed"}}},
				{Kind: wire.KindEvent, Exchange: 1, Size: int64(len(complete)), Messages: []wire.Message{{ID: "6", Response: true, ResultType: "complete"}}},
				{Kind: wire.KindEvent, Exchange: 1, Size: int64(len(related)),
					Messages: []wire.Message{{Method: "notifications/progress", ProgressToken: "a-2", Progress: float(1), TaskID: "t-8"}}},
				{Kind: wire.KindEvent, Exchange: 1, Size: int64(len(relatedResult)), Messages: []wire.Message{{ID: "7", Response: true, TaskID: "t-8"}}},
				{Kind: wire.KindBodyEnd, Exchange: 1, Size: total(taskEvents)},
			},
		},
		{
			name:    "HEAD, 1xx, 304 and 204 carry no body",
			methods: map[int64]string{1: "HEAD"},
			in: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n" +
				"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: x\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n" +
				"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200},
				{Kind: wire.KindResponse, Exchange: 2, Status: 304},
				{Kind: wire.KindResponse, Exchange: 3, Status: 204},
				{Kind: wire.KindResponse, Exchange: 4, Status: 200, Size: 2},
			},
		},
		{
			name: "a JSON body that is not JSON",
			in:   "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\nnope",
			want: []wire.Record{{Kind: wire.KindResponse, Exchange: 1, Status: 200, Size: 4, Header: &wire.Header{ContentType: "application/json"},
				Messages: []wire.Message{{Problem: "invalid JSON-RPC message: invalid character 'o' in literal null (expecting 'u')"}}}},
		},
		{
			name: "an SSE frame cut in half by the connection's end",
			in:   sse + "1e\r\nid: 4\ndata: {\"jsonrpc\":\"2.0\",",
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200, Header: sseHeader},
				{Kind: wire.KindMalformed, Exchange: 1, Size: 29, Problem: "SSE event cut by the end of the body"},
			},
		},
		{
			name: "upgrade",
			in:   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81\x05hello",
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 101},
				{Kind: wire.KindMalformed, Exchange: 1, Size: 56, Problem: "101 Switching Protocols: the new protocol is not read"},
			},
		},
		{
			name:    "CONNECT tunnel",
			methods: map[int64]string{1: "CONNECT"},
			in:      "HTTP/1.1 200 Connection established\r\n\r\n\x16\x03\x01",
			want: []wire.Record{
				{Kind: wire.KindResponse, Exchange: 1, Status: 200},
				{Kind: wire.KindMalformed, Exchange: 1, Size: 39, Problem: "CONNECT tunnel: not read"},
			},
		},
		{
			name: "not HTTP",
			in:   "SSH-2.0-OpenSSH_9.6\r\n",
			want: []wire.Record{{Kind: wire.KindMalformed, Size: 1, Problem: `not an HTTP/1.x response: byte 'S' at 0 of the status line`}},
		},
		{
			name: "bad status line",
			in:   "HTTP/1.1 2000 OK\r\n\r\n",
			want: []wire.Record{{Kind: wire.KindMalformed, Size: 18, Problem: `not an HTTP/1.x status line: "HTTP/1.1 2000 OK"`}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for seed := range uint64(4) {
				got, p := parseResponses(tc.in, seed, tc.methods)
				assert.Equal(t, tc.want, []wire.Record(got), "chunking %d", seed)
				assert.Equal(t, int64(len(tc.in)), p.read+p.unread)
			}
		})
	}
}

// TestLargeEventIsCountedNotKept feeds a 10 MB event through the response
// parser as a tap reads it: the parser never holds more than MaxBodyBytes
// of it, and allocates less than the event's size in all.
func TestLargeEventIsCountedNotKept(t *testing.T) {
	const size = 10 << 20
	var got records
	p := newResponseParser(&got, &pairing{})
	p.feed([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: 1\ndata: "))
	chunk := bytes.Repeat([]byte("x"), 32<<10) // as a tap reads
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for sent := 0; sent < size; sent += len(chunk) {
		p.feed(chunk[:min(len(chunk), size-sent)])
		require.LessOrEqual(t, cap(p.sse.data), MaxBodyBytes)
	}
	runtime.ReadMemStats(&after)
	p.feed([]byte("\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"))
	p.end()

	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(size), "bytes allocated while the event passed")
	require.Len(t, got, 3)
	assert.Equal(t, int64(size), got[1].Size)
	assert.Equal(t, "event data over 4194304 bytes: not read as JSON-RPC", got[1].Problem)
	assert.Empty(t, got[1].Messages)
	assert.Equal(t, []wire.Message{{ID: "1", Response: true}}, got[2].Messages)
}

package observer

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/wire"
)

var requestSeeds = []string{
	"POST /mcp HTTP/1.1\r\nContent-Type: application/json\r\nMcp-Session-Id: s1\r\nContent-Length: 63\r\n\r\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`,
	"GET /mcp HTTP/1.1\r\nLast-Event-ID: 4\r\n\r\nDELETE /mcp HTTP/1.1\r\n\r\n",
	"POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n[{\"a\"\r\n3;x=1\r\n:1}\r\n0\r\nT: 1\r\n\r\n",
	"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
	"\x16\x03\x01",
	"\r\n\r\nHEAD / HTTP/1.0\r\n\r\n",
}

var responseSeeds = []string{
	"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" +
		"20\r\nid: 1\nretry: 5\ndata:\n\n: keep\n\n\r\n" + "0\r\n\r\n",
	"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
	"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\nid: 1\rdata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\r",
	"HTTP/1.1 101 Switching Protocols\r\n\r\n\x81\x00",
	"HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 200 OK\r\n\r\nbody",
}

var messageSeeds = []string{
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a","progress":1,"total":2,"_meta":{"progressToken":3}}}`,
	`{"jsonrpc":"2.0","id":"x","result":{"isError":true,"taskId":"t","status":"working","resultType":"task"}}`,
	`{"jsonrpc":"2.0","id":null,"error":{"code":-32601,"message":"m","data":[1,{"a":null}]}}`,
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"charge","arguments":{"b":1, "a":[true]}}}`,
	`[{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r"}},{"jsonrpc":"1.0"}]`,
	`{"jsonrpc":"2.0","Method":"x","id":1e3}`, `{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t","status":"s"}}}`,
	` {"jsonrpc":"2.0","method":"a\u00e9"} }`, `{`, ``, `null`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":2},"id":3}`,
	`{"jsonrpc":"2.0","id":"é-1 a long string of text","result":{"status":"ok\tdone"}}`,
	`{"jsonrpc":"2.0","id":7,"result":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}}`,
	`{"jsonrpc":"2.0","method":"notifications/message","params":{"_meta":{"io.modelcontextprotocol/related-task":{"taskId":3}}}}`,
}

// parseStream feeds b to a parser in the chunking cut gives (none for 0),
// the first request being a HEAD or a CONNECT for some methods, and checks
// the parser's accounting: every byte read or passed unread.
func parseStream(t *testing.T, b []byte, cut, methods uint64, response bool) records {
	var got records
	pair := &pairing{}
	switch methods % 3 {
	case 1:
		pair.header(1, "HEAD")
	case 2:
		pair.header(1, "CONNECT")
	}
	var feed func([]byte)
	var end func()
	var count func() int64
	if response {
		p := newResponseParser(&got, pair)
		feed, end, count = p.feed, p.end, func() int64 { return p.read + p.unread }
	} else {
		p := newRequestParser(&got, pair)
		feed, end, count = p.feed, p.end, func() int64 { return p.read + p.unread }
	}
	for _, c := range chunks(b, cut) {
		feed(c)
	}
	end()
	require.Equal(t, int64(len(b)), count(), "every byte is read or passed unread")
	return got
}

// checkStream holds a parser to the same records whatever the chunking,
// and its records to what wire.jsonl can hold.
func checkStream(t *testing.T, b []byte, seed uint64, response bool) {
	whole := parseStream(t, b, 0, seed, response)
	cut := parseStream(t, b, seed|1, seed, response)
	require.Equal(t, whole, cut, "the records depend on the chunking")
	writable(t, cut)
}

// writable checks that wire.Writer encodes every record and wire.Read
// reads them back.
func writable(t *testing.T, recs []wire.Record) {
	var buf bytes.Buffer
	w := wire.NewWriter(&buf)
	for i := range recs {
		r := recs[i]
		if r.Kind == "" {
			r.Kind = wire.KindMalformed
		}
		_, err := w.Write(&r)
		require.NoError(t, err)
	}
	require.NoError(t, w.Flush())
	back, err := wire.Read(&buf)
	require.NoError(t, err)
	require.Len(t, back, len(recs))
}

func FuzzRequestStream(f *testing.F) {
	for i, s := range requestSeeds {
		f.Add([]byte(s), uint64(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) { checkStream(t, b, seed, false) })
}

func FuzzResponseStream(f *testing.F) {
	for i, s := range responseSeeds {
		f.Add([]byte(s), uint64(i))
	}
	for i, s := range messageSeeds {
		f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: "+s+"\n\n"), uint64(i))
	}
	f.Fuzz(func(t *testing.T, b []byte, seed uint64) { checkStream(t, b, seed, true) })
}

// FuzzMessages reads arbitrary bytes as a JSON body and as an event's
// data: never a panic, a record wire.jsonl can hold, and the fast path
// always agreeing with package mcp's reading when it reads a message at all.
func FuzzMessages(f *testing.F) {
	for _, s := range messageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs := bodyMessages(b)
		require.NotEmpty(t, msgs)
		ev := eventMessage(b)
		var fast wire.Message
		if fastMessage(b, &fast, new([2]float64), nil) {
			require.Equal(t, slowMessage(b), fast, "the fast path reads %q differently", b)
		}
		for _, m := range append(msgs, ev) {
			if m.Args != nil {
				d, err := wire.ArgsDigest(m.Args)
				require.NoError(t, err)
				require.Equal(t, m.ArgsDigest, d)
			}
		}
		writable(t, []wire.Record{{Kind: wire.KindRequest, Messages: msgs}, {Kind: wire.KindEvent, Messages: []wire.Message{ev}}})
	})
}

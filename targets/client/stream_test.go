package client

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// FuzzReadStream feeds arbitrary bodies to the reader of a call's stream:
// it never panics, and every body ends in exactly one of an outcome (or a
// task handle, with a task id) and a close.
func FuzzReadStream(f *testing.F) {
	f.Add([]byte("id: 1\nretry: 5\ndata:\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n"), true)
	f.Add([]byte("event: close\ndata: {}\n\n"), true)
	f.Add([]byte("id: 3\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":4}}\n\nid: 4\ndata: {\"jso"), true)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"isError":true,"structuredContent":{"error":"interrupted_by_restart"}}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"x"}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"t1","status":"working","createdAt":"x","lastUpdatedAt":"x","ttl":null,"pollInterval":5}}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"","status":"working"}}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"task":7}}`), false)
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"result":{"resultType":"task","taskId":"t2","pollIntervalMs":-1}}`), false)
	f.Fuzz(func(t *testing.T, body []byte, sse bool) {
		g := newRig("http://127.0.0.1:1/mcp")
		a, err := newAgent(TargetResumable, g.opts, workload.Client{ID: "c1"})
		require.NoError(t, err)
		ct := mcp.ContentTypeJSON
		if sse {
			ct = mcp.ContentTypeSSE
		}
		x := &exchange{
			resp:   &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {ct}}, Body: io.NopCloser(bytes.NewReader(body))},
			cancel: func() {},
			wd:     newWatchdog(0, nil),
		}
		s := &stream{call: charge("x"), requestID: "2"}
		out, cl, _, err := a.read(context.Background(), s, x)
		require.NoError(t, err)
		broke := cl.Err != nil || cl.CloseEvent || cl.Status != 0
		require.NotEqual(t, out != nil, broke, "outcome %+v, close %+v", out, cl)
		switch {
		case out != nil && out.task != nil:
			require.NotEmpty(t, out.task.id)
		case out != nil:
			require.True(t, out.kind.IsOutcome())
		}
	})
}

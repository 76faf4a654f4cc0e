package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// BenchmarkCursorSave measures one durable cursor move, the cost a file
// cursor adds to every event a resumable client receives.
func BenchmarkCursorSave(b *testing.B) {
	stores := map[string]Store{"memory": NewMemoryStore("c1"), "file": NewFileStore(b.TempDir(), "c1")}
	for _, name := range []string{"memory", "file"} {
		b.Run(name, func(b *testing.B) {
			st := stores[name]
			c := Cursor{Client: "c1", Session: "s1", Done: make([]Completed, 10), InFlight: &InFlight{Call: "x", RequestID: "9"}}
			for i := 0; b.Loop(); i++ {
				c.InFlight.LastEventID = fmt.Sprint(i)
				require.NoError(b, st.Save(c))
			}
		})
	}
}

// BenchmarkReadEvents measures how many progress events per second the
// resumable client takes off one SSE stream, recording each in the history,
// with each cursor store.
func BenchmarkReadEvents(b *testing.B) {
	const events = 1000
	var body bytes.Buffer
	for i := 1; i <= events; i++ {
		n, _ := mcp.NewNotification(mcp.MethodProgress, mcp.ProgressParams{ProgressToken: 2, Progress: float64(i)})
		data, _ := json.Marshal(n)
		require.NoError(b, mcp.WriteEvent(&body, mcp.Event{ID: fmt.Sprint(i), Data: data}))
	}
	res, _ := mcp.NewResult(json.RawMessage("2"), okResult())
	data, _ := json.Marshal(res)
	require.NoError(b, mcp.WriteEvent(&body, mcp.Event{ID: fmt.Sprint(events + 1), Data: data}))
	for _, name := range []string{CursorMemory, CursorFile} {
		b.Run(name, func(b *testing.B) {
			opts := workload.Options{Endpoint: "http://127.0.0.1:1/mcp", Cursor: name, CursorDir: b.TempDir(),
				History: history.NewWriter(io.Discard, runclock.Start())}
			a, err := newAgent(TargetResumable, opts, workload.Client{ID: "c1"})
			require.NoError(b, err)
			st, err := OpenStore(opts, "c1")
			require.NoError(b, err)
			r := &resumable{agent: a, store: st, cur: Cursor{Client: "c1", InFlight: &InFlight{Call: "x"}}}
			for b.Loop() {
				x := &exchange{
					resp:   &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {mcp.ContentTypeSSE}}, Body: io.NopCloser(bytes.NewReader(body.Bytes()))},
					cancel: func() {}, wd: newWatchdog(0, nil),
				}
				s := &stream{call: chatty("x", events), requestID: "2", persist: r.persister()}
				out, _, _, err := a.read(context.Background(), s, x)
				require.NoError(b, err)
				require.Equal(b, history.KindOK, out.kind)
			}
			b.ReportMetric(float64(events*b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

package gosdk

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// runModern runs the go-sdk client at 2026-07-28 against endpoint.
func runModern(t *testing.T, endpoint string, w *watch, calls ...workload.Call) []history.Record {
	t.Helper()
	clock := runclock.Start()
	opts := workload.Options{Endpoint: endpoint, Clock: clock, History: history.NewWriter(w, clock), Protocol: mcpwire.Version20260728}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, RunClient(w.trace(ctx), opts, workload.Client{ID: "client-1", Calls: calls}))
	return w.records()
}

// TestGoSDKClientModernAfterCut_CurrentBehaviour runs the go-sdk client at
// 2026-07-28 against both servers that speak it and cuts the connection
// while the first of two charges runs. The client connects with
// server/discover (no session, no initialize), and after the cut it does
// not resume (there is nothing to resume at 2026-07-28) nor re-issue the
// call: the call fails at once and the adapter records its outcome
// unknown. The next call goes out on the same connection, as the first
// send of its own. What the cut call did on the server differs: the
// reference server takes the closed stream as cancellation (and, with
// on_cancel: stop, does not charge); the go-sdk server charges anyway.
func TestGoSDKClientModernAfterCut_CurrentBehaviour(t *testing.T) {
	tests := []struct {
		server    string
		serve     func(t *testing.T, l *sideeffects.Memory) string
		cancelled int // call_cancelled records on the server
		charges   int
	}{
		{Target, func(t *testing.T, l *sideeffects.Memory) string {
			s, err := NewServer(ServerConfig{Recorder: l, Stateless: true})
			require.NoError(t, err)
			return serveSDK(t, s)
		}, 0, 2},
		{"reference", func(t *testing.T, l *sideeffects.Memory) string { return serveReference(t, l, server.Config{}) }, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.server, func(t *testing.T) {
			l := newLedger()
			p := newProxy(t, tc.serve(t, l))
			started := l.Next(kindIs(sideeffects.KindCallStarted))
			go func() {
				await(t, started, "the first charge to start")
				p.cut(t)
			}()
			w := newWatch()
			recs := runModern(t, p.URL+"/mcp", w, charge("c1", 300*time.Millisecond), charge("c2", 5*time.Millisecond))
			for l.Count(sideeffects.KindCallFinished) < 2 {
				await(t, l.Next(kindIs(sideeffects.KindCallFinished)), "both charges to finish")
			}

			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew,
				history.KindInvoke, history.KindStreamBreak, history.KindUnknown,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, historyKinds(recs))
			sn := only(recs, history.KindSessionNew)[0]
			assert.Empty(t, sn.Session, "no session at 2026-07-28")
			assert.Equal(t, mcpwire.Version20260728, sn.Protocol)
			assert.Equal(t, 2, l.Count(sideeffects.KindCallStarted), "the cut call was not issued again")
			assert.Equal(t, tc.cancelled, l.Count(sideeffects.KindCallCancelled))
			assert.Equal(t, tc.charges, l.Count(sideeffects.KindCharge))
			assert.Equal(t, "eof", only(recs, history.KindUnknown)[0].Reason)
		})
	}
}

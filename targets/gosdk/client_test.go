package gosdk

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// sdkServer is what both SDK servers offer.
type sdkServer interface {
	Handler() http.Handler
	Close() error
}

func newSDKServer(t *testing.T, sdk string, l sideeffects.Recorder) sdkServer {
	t.Helper()
	var s sdkServer
	var err error
	switch sdk {
	case Target:
		s, err = NewServer(ServerConfig{Recorder: l})
	case mcpgo.Target:
		s, err = mcpgo.NewServer(mcpgo.ServerConfig{Recorder: l})
	}
	require.NoError(t, err)
	return s
}

// serveSDK serves s on 127.0.0.1:0, closing s before the HTTP server so
// that no hanging SSE request keeps the HTTP server's Close waiting.
func serveSDK(t *testing.T, s sdkServer) string {
	t.Helper()
	url := serve(t, s.Handler())
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return url
}

// events returns the seq of every event record, in order.
func events(recs []history.Record) []int64 {
	var out []int64
	for _, r := range recs {
		if r.Kind == history.KindEvent {
			out = append(out, r.Seq)
		}
	}
	return out
}

func only(recs []history.Record, k history.Kind) []history.Record {
	var out []history.Record
	for _, r := range recs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

// TestRunClientAgainstSDKServers runs a chatty and a charge call through
// the go-sdk client against both SDK servers. Against mcp-go, progress
// notifications can arrive after the result, or not at all: mcp-go hands a
// session's notifications to whichever of the call's stream and the
// client's standalone GET stream reads first (see the mcpgo package), so
// only their uniqueness is checked there.
func TestRunClientAgainstSDKServers(t *testing.T) {
	for _, sdk := range []string{Target, mcpgo.Target} {
		t.Run(sdk, func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			url := serveSDK(t, newSDKServer(t, sdk, l))
			recs := runClient(t, RunClient, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindOK,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, withoutEvents(recs))
			if sdk == Target {
				assert.Equal(t, []int64{1, 2, 3}, events(between(recs, history.KindInvoke, history.KindOK)))
			} else {
				assert.Subset(t, []int64{1, 2, 3}, events(recs))
				assert.Len(t, slices.Compact(slices.Sorted(slices.Values(events(recs)))), len(events(recs)))
			}
			session := recs[1].Session
			require.NotEmpty(t, session)
			assert.Equal(t, Target, recs[0].Target)
			for _, r := range recs {
				assert.Equal(t, "client-1", r.Client)
				switch r.Kind {
				case history.KindInvoke, history.KindEvent, history.KindOK:
					assert.Equal(t, session, r.Session)
					assert.NotEmpty(t, r.RequestID)
				}
				if r.Kind == history.KindEvent {
					assert.Positive(t, r.EventID, "both SDK servers give events ids")
				}
			}
			invokes := only(recs, history.KindInvoke)
			assert.Equal(t, "c2", invokes[1].OrderID)
			assert.Equal(t, 1, invokes[1].Attempt)
			assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
			assert.Equal(t, invokes[1].RequestID, l.Of(sideeffects.KindCharge)[0].RequestID,
				"client and server agree on the request id")
		})
	}
}

// TestGoSDKClientAfterCut_CurrentBehaviour cuts every connection between
// the go-sdk client and an SDK server while a call runs, and heals at once.
// Against the go-sdk server (which sends a priming event id) the client
// reconnects with Last-Event-ID after its fixed 1–2 s delay, and receives
// the events it missed and the original result: one charge, outcome ok.
// Against mcp-go a charge (no event id before its plain JSON answer) simply
// fails: the outcome is unknown while the tool goes on to charge. A chatty
// call against mcp-go is resumed, but the resumed stream does not replay
// the events emitted during the outage: mcp-go sends them to the session's
// standalone stream, where they arrive whenever that stream reconnects, if
// before the client leaves.
func TestGoSDKClientAfterCut_CurrentBehaviour(t *testing.T) {
	resumed := []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindReconnect, history.KindResume, history.KindOK}
	tests := []struct {
		server, tool string
		kinds        []history.Kind // from the invoke on, events left out
		replayed     bool           // the missed events come on the resumed stream
	}{
		{Target, "charge", resumed, false},
		{mcpgo.Target, "charge", []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindUnknown}, false},
		{Target, "chatty", resumed, true},
		{mcpgo.Target, "chatty", resumed, false},
	}
	for _, tc := range tests {
		t.Run(tc.server+"/"+tc.tool, func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			held := holdEvent(l, 4) // the cut comes between events 3 and 4
			p := newProxy(t, serveSDK(t, newSDKServer(t, tc.server, held)))
			w := newWatch()
			call, trigger := charge("c1", 300*time.Millisecond), cutPoint(tc.server, w, l)
			if tc.tool == "chatty" {
				call, trigger = chatty("c1", 10, 300*time.Millisecond), w.on(func(r history.Record) bool {
					return r.Kind == history.KindEvent && r.Seq == 3
				})
			}
			go func() {
				await(t, trigger, "the call to be under way")
				p.cut(t)
				close(held.release)
			}()
			recs := runWatched(t, RunClient, p.URL+"/mcp", w, call)
			finished := l.Next(kindIs(sideeffects.KindResultWritten))
			if l.Count(sideeffects.KindResultWritten) == 0 {
				await(t, finished, "the tool to finish")
			}

			assert.Equal(t, tc.kinds, withoutEvents(recs[2:len(recs)-1]))
			assert.Equal(t, "eof", only(recs, history.KindStreamBreak)[0].Reason)
			if tc.tool == "charge" {
				assert.Equal(t, 1, l.Count(sideeffects.KindCharge), "the tool ran to the end exactly once")
				return
			}
			assert.Equal(t, []int64{1, 2, 3}, events(between(recs, history.KindInvoke, history.KindStreamBreak)))
			missed := []int64{4, 5, 6, 7, 8, 9, 10}
			onResume := events(between(recs, history.KindResume, history.KindOK))
			assert.Equal(t, tc.replayed, slices.Equal(missed, onResume), "events on the resumed stream: %v", onResume)
			got := events(recs)
			assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "no event twice")
			assert.Equal(t, 10, l.Count(sideeffects.KindEventEmitted))
		})
	}
}

func withoutEvents(recs []history.Record) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		if r.Kind != history.KindEvent {
			out = append(out, r.Kind)
		}
	}
	return out
}

// between returns the records after the first of kind from and before the
// next of kind to.
func between(recs []history.Record, from, to history.Kind) []history.Record {
	var out []history.Record
	in := false
	for _, r := range recs {
		switch {
		case !in && r.Kind == from:
			in = true
		case in && r.Kind == to:
			return out
		case in:
			out = append(out, r)
		}
	}
	return out
}

// cutPoint is when to cut a charge: once the go-sdk server's priming
// event has reached the client (the go-sdk writes it with the response
// headers), or, for mcp-go whose charge answer is one JSON body at the end,
// once the tool has started.
func cutPoint(server string, w *watch, l *sideeffects.Memory) <-chan struct{} {
	if server == Target {
		return w.answering()
	}
	return l.Next(kindIs(sideeffects.KindCallStarted))
}

// faulty answers a GET carrying Last-Event-ID with status while status is
// set, as a load balancer in front of the server would.
type faulty struct {
	h      http.Handler
	status atomic.Int32
}

func (f *faulty) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s := int(f.status.Load()); s != 0 && r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		http.Error(w, http.StatusText(s), s)
		return
	}
	f.h.ServeHTTP(w, r)
}

// TestGoSDKClientReconnectStatus_CurrentBehaviour answers the go-sdk
// client's reconnect after a cut with an error status. Whatever the status
// (a 503 the spec calls transient, a 404 for the session, the 400 go-sdk
// servers send for an evicted Last-Event-ID) the SDK does not retry: it
// fails the whole session, the call's outcome is unknown, and the next call
// needs a new session (the old one is recorded lost: status_404 after a
// 404, abandoned otherwise).
func TestGoSDKClientReconnectStatus_CurrentBehaviour(t *testing.T) {
	tests := []struct {
		status   int
		lostWhy  string
		reconnID string
	}{
		{http.StatusServiceUnavailable, "abandoned", "status_503"},
		{http.StatusNotFound, "status_404", "status_404"},
		{http.StatusBadRequest, "abandoned", "status_400"},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			s := newSDKServer(t, Target, l)
			f := &faulty{h: s.Handler()}
			f.status.Store(int32(tc.status))
			p := newProxy(t, serve(t, f))
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			w := newWatch()
			go func() {
				await(t, w.answering(), "the charge's stream to open")
				p.cut(t)
			}()
			recs := runWatched(t, RunClient, p.URL+"/mcp", w, charge("c1", 200*time.Millisecond), charge("c2", time.Millisecond))

			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindStreamBreak,
				history.KindReconnect, history.KindUnknown, history.KindSessionLost, history.KindSessionNew,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, historyKinds(recs))
			assert.Equal(t, tc.reconnID, only(recs, history.KindReconnect)[0].Result)
			assert.Equal(t, tc.reconnID, only(recs, history.KindUnknown)[0].Reason)
			assert.Equal(t, tc.lostWhy, only(recs, history.KindSessionLost)[0].Reason)
			sessions := only(recs, history.KindSessionNew)
			assert.NotEqual(t, sessions[0].Session, sessions[1].Session)
		})
	}
}

func TestRunClientWithoutHistory(t *testing.T) {
	err := RunClient(context.Background(), workload.Options{Endpoint: "http://127.0.0.1:1/mcp"}, workload.Client{ID: "x"})
	require.ErrorIs(t, err, sdkclient.ErrNoHistory)
}

package mcpgo

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/workload"
)

type sdkServer interface {
	Handler() http.Handler
	Close() error
}

// serveSDK starts the named SDK's server writing to l, on 127.0.0.1:0.
func serveSDK(t *testing.T, sdk string, l sideeffects.Recorder) string {
	t.Helper()
	var s sdkServer
	var err error
	switch sdk {
	case Target:
		s, err = NewServer(ServerConfig{Recorder: l})
	case gosdk.Target:
		s, err = gosdk.NewServer(gosdk.ServerConfig{Recorder: l})
	}
	require.NoError(t, err)
	url := serve(t, s.Handler())
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return url
}

func events(recs []history.Record) []int64 {
	var out []int64
	for _, r := range recs {
		if r.Kind == history.KindEvent {
			out = append(out, r.Seq)
		}
	}
	return out
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

func only(recs []history.Record, k history.Kind) []history.Record {
	var out []history.Record
	for _, r := range recs {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

func TestRunClientAgainstSDKServers(t *testing.T) {
	for _, sdk := range []string{gosdk.Target, Target} {
		t.Run(sdk, func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			url := serveSDK(t, sdk, l)
			recs := runClient(t, RunClient, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew,
				history.KindInvoke, history.KindEvent, history.KindEvent, history.KindEvent, history.KindOK,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, historyKinds(recs))
			assert.Equal(t, []int64{1, 2, 3}, events(recs))
			session := recs[1].Session
			require.NotEmpty(t, session)
			assert.Equal(t, mcpwire.Version20251125, recs[1].Protocol)
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
			assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
			assert.Equal(t, only(recs, history.KindInvoke)[1].RequestID, l.Of(sideeffects.KindCharge)[0].RequestID,
				"client and server agree on the request id")
		})
	}
}

// TestMCPGoClientAfterCut_CurrentBehaviour cuts every connection between
// the mcp-go client and an SDK server while a call runs. mcp-go never
// reconnects a stream that broke off (only one the server ended cleanly):
// the call fails at once and its outcome is unknown, while the tool runs to
// its end on the server. The session survives: the next call succeeds on
// it.
func TestMCPGoClientAfterCut_CurrentBehaviour(t *testing.T) {
	tests := []struct{ server, tool string }{
		{gosdk.Target, "charge"}, {Target, "charge"}, {gosdk.Target, "chatty"}, {Target, "chatty"},
	}
	for _, tc := range tests {
		t.Run(tc.server+"/"+tc.tool, func(t *testing.T) {
			t.Parallel()
			l := newLedger()
			held := holdEvent(l, 4) // the cut comes between events 3 and 4
			p := newProxy(t, serveSDK(t, tc.server, held))
			w := newWatch()
			call := charge("c1", 200*time.Millisecond)
			trigger := l.Next(kindIs(sideeffects.KindCallStarted))
			if tc.tool == "chatty" {
				call = chatty("c1", 10, 200*time.Millisecond)
				trigger = w.on(func(r history.Record) bool { return r.Kind == history.KindEvent && r.Seq == 3 })
			}
			healed := make(chan struct{})
			w.hold = func(r history.Record) {
				if r.Kind == history.KindUnknown {
					<-healed // the next call waits for the proxy to accept again
				}
			}
			go func() {
				await(t, trigger, "the call to be under way")
				p.cut(t)
				close(healed)
				close(held.release)
			}()
			finished := l.Next(func(r sideeffects.Record) bool {
				return r.Kind == sideeffects.KindResultWritten && r.RequestID == "2"
			})
			recs := runWatched(t, RunClient, p.URL+"/mcp", w, call, charge("c2", time.Millisecond))
			await(t, finished, "the cut call's tool to finish")

			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindStreamBreak,
				history.KindUnknown, history.KindInvoke, history.KindOK, history.KindClientStop,
			}, withoutEvents(recs))
			assert.Equal(t, "eof", only(recs, history.KindUnknown)[0].Reason)
			if tc.tool == "charge" {
				assert.Equal(t, 2, l.Count(sideeffects.KindCharge), "the cut charge ran to its end too")
				return
			}
			got := events(recs)
			require.GreaterOrEqual(t, len(got), 3)
			assert.Equal(t, []int64{1, 2, 3}, got[:3], "the events before the cut, in order")
			assert.Equal(t, 10, l.Count(sideeffects.KindEventEmitted))
		})
	}
}

// scripted is an MCP server whose first tools/call stream ends cleanly
// after one progress notification with an event id and a 10 ms retry, the
// SEP-1699 way of asking the client to poll. It answers the resume with
// status (and the call's result when status is 200); later calls are
// answered at once.
type scripted struct {
	status int

	mu       sync.Mutex
	sessions int
	calls    int
	lastCall string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		s.resume(w, r)
	case http.MethodPost:
		b, _ := io.ReadAll(r.Body)
		m, err := mcpwire.ParseMessage(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.post(w, m)
	}
}

func (s *scripted) post(w http.ResponseWriter, m mcpwire.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case m.IsNotification():
		w.WriteHeader(http.StatusAccepted)
	case m.Method == mcpwire.MethodInitialize:
		s.sessions++
		w.Header().Set(mcpwire.HeaderSessionID, fmt.Sprintf("s-%d", s.sessions))
		w.Header().Set("Content-Type", mcpwire.ContentTypeJSON)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},`+
			`"serverInfo":{"name":"scripted","version":"1"}}}`, m.ID)
	case s.calls == 0:
		s.calls++
		s.lastCall = string(m.ID)
		w.Header().Set("Content-Type", mcpwire.ContentTypeSSE)
		fmt.Fprint(w, "retry: 10\nid: 1\ndata: "+
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":1}}`+"\n\n")
	default:
		w.Header().Set("Content-Type", mcpwire.ContentTypeJSON)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
	}
}

func (s *scripted) resume(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(mcpwire.HeaderLastEventID) == "" {
		http.Error(w, "no standalone stream", http.StatusMethodNotAllowed)
		return
	}
	if s.status != http.StatusOK {
		http.Error(w, http.StatusText(s.status), s.status)
		return
	}
	s.mu.Lock()
	id := s.lastCall
	s.mu.Unlock()
	w.Header().Set("Content-Type", mcpwire.ContentTypeSSE)
	fmt.Fprintf(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", id)
}

// TestMCPGoClientResume_CurrentBehaviour lets a server end the call's
// stream cleanly after an event id, which mcp-go does resume (after the
// server's retry delay) with GET and Last-Event-ID. A 200 resumes the call.
// Any other answer fails it at once, with no retry: a 503 the spec calls
// transient, the 400 SDK servers send for an evicted id, and a 404, after
// which mcp-go asks to initialize again.
func TestMCPGoClientResume_CurrentBehaviour(t *testing.T) {
	tests := []struct {
		status int
		kinds  []history.Kind // after the stream break
	}{
		{http.StatusOK, []history.Kind{history.KindReconnect, history.KindResume, history.KindOK,
			history.KindInvoke, history.KindOK, history.KindClientStop}},
		{http.StatusServiceUnavailable, []history.Kind{history.KindReconnect, history.KindUnknown,
			history.KindInvoke, history.KindOK, history.KindClientStop}},
		{http.StatusBadRequest, []history.Kind{history.KindReconnect, history.KindUnknown,
			history.KindInvoke, history.KindOK, history.KindClientStop}},
		{http.StatusNotFound, []history.Kind{history.KindReconnect, history.KindUnknown, history.KindSessionLost,
			history.KindSessionNew, history.KindInvoke, history.KindOK, history.KindClientStop}},
	}
	for _, tc := range tests {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			t.Parallel()
			url := serve(t, &scripted{status: tc.status})
			recs := runClient(t, RunClient, url, charge("c1", 0), charge("c2", 0))

			// The event and the end of the stream can arrive in one read, so
			// the break may be recorded before the SDK hands the event over.
			assert.Equal(t, append([]history.Kind{history.KindClientStart, history.KindSessionNew, history.KindInvoke,
				history.KindStreamBreak}, tc.kinds...), withoutEvents(recs))
			assert.Equal(t, []int64{1}, events(recs))
			assert.Equal(t, "eof", only(recs, history.KindStreamBreak)[0].Reason, "a clean end before the answer")
			rc := only(recs, history.KindReconnect)[0]
			assert.EqualValues(t, 1, rc.LastEventID)
			if tc.status != http.StatusOK {
				assert.Equal(t, fmt.Sprintf("status_%d", tc.status), rc.Result)
				assert.Equal(t, rc.Result, only(recs, history.KindUnknown)[0].Reason)
			}
		})
	}
}

func TestRunClientWithoutHistory(t *testing.T) {
	err := RunClient(context.Background(), workload.Options{Endpoint: "http://127.0.0.1:1/mcp"}, workload.Client{ID: "x"})
	require.ErrorIs(t, err, sdkclient.ErrNoHistory)
}

// TestRunClientServerDown records a call the client could not even
// initialize for as failed and not sent.
func TestRunClientServerDown(t *testing.T) {
	recs := runClient(t, RunClient, "http://127.0.0.1:1/mcp", charge("c1", 0))
	assert.Equal(t, []history.Kind{history.KindClientStart, history.KindInvoke, history.KindFail,
		history.KindClientStop}, historyKinds(recs))
	assert.Equal(t, "not_sent", recs[2].Reason)
}

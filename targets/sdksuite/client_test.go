package sdksuite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// eachClient runs test against every SDK's client, in parallel.
func eachClient(t *testing.T, test func(t *testing.T, c clientTarget)) {
	for _, s := range sdks {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			test(t, s.client)
		})
	}
}

// eachPair runs test for every SDK's client against every server, in
// parallel.
func eachPair(t *testing.T, test func(t *testing.T, c clientTarget, srv serverTarget)) {
	eachPairWhere(t, func(clientTarget, serverTarget) bool { return true }, test)
}

// eachPairWhere is eachPair for the pairs keep keeps.
func eachPairWhere(t *testing.T, keep func(clientTarget, serverTarget) bool, test func(t *testing.T, c clientTarget, srv serverTarget)) {
	for _, s := range sdks {
		for _, srv := range servers() {
			if !keep(s.client, srv) {
				continue
			}
			t.Run(s.name+"/"+srv.name, func(t *testing.T) {
				t.Parallel()
				test(t, s.client, srv)
			})
		}
	}
}

// TestClientAgainstServers runs a chatty and a charge call through each
// SDK's client against each server. Where the client listens on the
// standalone GET stream and the server splits a call's progress between
// that stream and the call's own, progress notifications can arrive after
// the result, or not at all, so only their uniqueness is checked there.
func TestClientAgainstServers(t *testing.T) {
	eachPair(t, func(t *testing.T, c clientTarget, srv serverTarget) {
		l := sideeffects.NewMemory()
		url := serve(t, srv, serverConfig{recorder: l})
		recs := runClient(t, c.run, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

		if c.listens && srv.splitsProgress {
			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindOK,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, withoutEvents(recs))
			assert.Subset(t, []int64{1, 2, 3}, events(recs))
			assert.Len(t, slices.Compact(slices.Sorted(slices.Values(events(recs)))), len(events(recs)))
		} else {
			assert.Equal(t, []history.Kind{
				history.KindClientStart, history.KindSessionNew,
				history.KindInvoke, history.KindEvent, history.KindEvent, history.KindEvent, history.KindOK,
				history.KindInvoke, history.KindOK, history.KindClientStop,
			}, historyKinds(recs))
			assert.Equal(t, []int64{1, 2, 3}, events(recs))
		}
		session := recs[1].Session
		require.NotEmpty(t, session)
		assert.Equal(t, mcp.Version20251125, recs[1].Protocol)
		assert.Equal(t, c.name, recs[0].Target)
		for _, r := range recs {
			assert.Equal(t, "client-1", r.Client)
			switch r.Kind {
			case history.KindInvoke, history.KindEvent, history.KindOK:
				assert.Equal(t, session, r.Session)
				assert.NotEmpty(t, r.RequestID)
			}
			if r.Kind == history.KindEvent {
				assert.Positive(t, r.EventID, "every server gives events ids")
			}
		}
		invokes := only(recs, history.KindInvoke)
		assert.Equal(t, "c2", invokes[1].OrderID)
		assert.Equal(t, 1, invokes[1].Attempt)
		charges := l.Of(sideeffects.KindCharge)
		require.Len(t, charges, 1)
		assert.Equal(t, invokes[1].RequestID, charges[0].RequestID, "client and server agree on the request id")
		assert.Equal(t, srv.name, charges[0].Source)
	})
}

// TestClientAfterCut_CurrentBehaviour cuts every connection between a
// client and a server while a call runs, heals at once, and makes a second
// call. A client that resumes a broken stream does so when it has read an
// event id on it: always for chatty (the cut comes after its third event),
// for a charge only where the server primes its stream. It reconnects with
// Last-Event-ID (after the server's retry field where it sent one, else
// after its own 1–2 s), and receives the original result: one charge,
// outcome ok; the missed events come on the resumed stream where the
// server replays them (mcp-go sends them to the session's standalone
// stream instead, where they arrive whenever that stream reconnects, if
// before the client leaves). Otherwise the call fails at once and its
// outcome is unknown, while the tool runs to its end on the server (the
// test holds the client's next call until it has). Either way the session
// survives: the next call succeeds on it.
func TestClientAfterCut_CurrentBehaviour(t *testing.T) {
	for _, tool := range []string{"charge", "chatty"} {
		t.Run(tool, func(t *testing.T) {
			eachPair(t, func(t *testing.T, c clientTarget, srv serverTarget) {
				afterCut(t, c, srv, tool)
			})
		})
	}
}

func afterCut(t *testing.T, c clientTarget, srv serverTarget, tool string) {
	l := sideeffects.NewMemory()
	held := holdEvent(l, 4) // the cut comes between events 3 and 4
	p := newProxy(t, serve(t, srv, serverConfig{recorder: held}))
	w := newWatch()
	call := charge("c1", 300*time.Millisecond)
	// A charge is cut once the server's priming event has reached the
	// client (it comes with the response headers), or, where there is
	// none, once the tool has started.
	trigger := l.Next(kindIs(sideeffects.KindCallStarted))
	if srv.primes {
		trigger = w.answering()
	}
	if tool == "chatty" {
		call = chatty("c1", 10, 300*time.Millisecond)
		trigger = w.on(func(r history.Record) bool { return r.Kind == history.KindEvent && r.Seq == 3 })
	}
	// A client that gives up on the cut call makes its next call once the
	// call's tool has finished, so that the tool outlives no session (the
	// reference server ends a closed session's tools).
	cutWhen(t, p, w, trigger, func() { close(held.release) }, l.Next(kindIs(sideeffects.KindCallFinished)))
	recs := runWatched(t, c.run, p.URL+"/mcp", w, call, charge("c2", time.Millisecond))
	awaitCount(t, l, sideeffects.KindCallFinished, 2, "both calls' tools to finish")

	resumed := c.resumesBroken && (tool == "chatty" || srv.primes)
	want := []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindUnknown}
	if resumed {
		want = []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindReconnect, history.KindResume, history.KindOK}
	}
	want = append(append([]history.Kind{history.KindClientStart, history.KindSessionNew}, want...),
		history.KindInvoke, history.KindOK, history.KindClientStop)
	assert.Equal(t, want, withoutEvents(recs))
	assert.Equal(t, "eof", only(recs, history.KindStreamBreak)[0].Reason)
	if resumed {
		rc := only(recs, history.KindReconnect)[0]
		assert.Equal(t, "ok", rc.Result)
		if srv.retry {
			assert.Less(t, rc.DelayUS, c.ownDelay.Microseconds()/2, "the server's retry field, not the client's own delay")
		} else {
			assert.GreaterOrEqual(t, rc.DelayUS, c.ownDelay.Microseconds()/2, "the client's own delay")
		}
	} else {
		assert.Equal(t, "eof", only(recs, history.KindUnknown)[0].Reason)
	}
	if tool == "charge" {
		assert.Equal(t, 2, l.Count(sideeffects.KindCharge))
		assert.Equal(t, 1, countIf(l.Of(sideeffects.KindCharge), func(r sideeffects.Record) bool { return r.OrderID == "c1" }),
			"the cut charge ran to its end exactly once")
		return
	}
	assert.Equal(t, []int64{1, 2, 3}, events(between(recs, history.KindInvoke, history.KindStreamBreak)),
		"the events before the cut, in order")
	assert.Equal(t, 10, l.Count(sideeffects.KindEventEmitted), "the tool ran to its end")
	got := events(recs)
	assert.Len(t, slices.Compact(slices.Sorted(slices.Values(got))), len(got), "no event twice")
	if !resumed {
		return
	}
	onResume := events(between(recs, history.KindResume, history.KindOK))
	assert.Equal(t, srv.replays, slices.Equal([]int64{4, 5, 6, 7, 8, 9, 10}, onResume), "events on the resumed stream: %v", onResume)
	if srv.replays {
		assert.Equal(t, []int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, got, "every event once, in order")
	}
}

// is matches x.
func is[T comparable](x T) func(T) bool { return func(y T) bool { return y == x } }

func countIf[T any](xs []T, keep func(T) bool) int {
	n := 0
	for _, x := range xs {
		if keep(x) {
			n++
		}
	}
	return n
}

// scripted is an MCP server whose first tools/call stream ends cleanly
// after one progress notification with an event id and a 10 ms retry, the
// SEP-1699 way of asking the client to poll. It answers the resume with
// status (and the call's result when status is 200); later calls are
// answered at once. It has no standalone stream (405).
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
		m, err := mcp.ParseMessage(b)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.post(w, m)
	}
}

func (s *scripted) post(w http.ResponseWriter, m mcp.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case m.IsNotification():
		w.WriteHeader(http.StatusAccepted)
	case m.Method == mcp.MethodInitialize:
		s.sessions++
		w.Header().Set(mcp.HeaderSessionID, fmt.Sprintf("s-%d", s.sessions))
		w.Header().Set("Content-Type", mcp.ContentTypeJSON)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},`+
			`"serverInfo":{"name":"scripted","version":"1"}}}`, m.ID)
	case s.calls == 0:
		s.calls++
		s.lastCall = string(m.ID)
		w.Header().Set("Content-Type", mcp.ContentTypeSSE)
		fmt.Fprint(w, "retry: 10\nid: 1\ndata: "+
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"c1","progress":1}}`+"\n\n")
	default:
		w.Header().Set("Content-Type", mcp.ContentTypeJSON)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`, m.ID)
	}
}

func (s *scripted) resume(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(mcp.HeaderLastEventID) == "" {
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
	w.Header().Set("Content-Type", mcp.ContentTypeSSE)
	fmt.Fprintf(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"ok\"}]}}\n\n", id)
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

// resumeWay is how a test brings a client to resume a call, and what the
// client has read of the call's stream by then.
type resumeWay struct {
	name string
	// broken: the stream breaks off (a cut); else the server ends it
	// cleanly after an event id.
	broken bool
	// lastEventID is the id the client resumes from, and events the
	// progress it read before.
	lastEventID int64
	events      []int64
}

var resumeWays = []resumeWay{
	// The go-sdk server's priming event, index 0, then a cut.
	{name: "cut", broken: true, lastEventID: 0, events: nil},
	// The scripted server's progress notification, id 1, then a clean end.
	{name: "clean_end", broken: false, lastEventID: 1, events: []int64{1}},
}

// start serves the way's server, answering the resume with status, and
// returns the client's endpoint. For a cut it cuts the first call's stream
// once its answer has begun (after the go-sdk server's priming event).
func (way resumeWay) start(t *testing.T, w *watch, status int) string {
	t.Helper()
	if !way.broken {
		return listen(t, &scripted{status: status})
	}
	h, err := startGoSDK(serverConfig{recorder: sideeffects.NewMemory()})
	require.NoError(t, err)
	f := &faulty{h: h.Handler()}
	if status != http.StatusOK {
		f.status.Store(int32(status))
	}
	p := newProxy(t, listen(t, f))
	t.Cleanup(func() { require.NoError(t, h.Close()) })
	go func() {
		await(t, w.answering(), "the charge's stream to open")
		p.cut(t)
	}()
	return p.URL + "/mcp"
}

// TestClientResumeAnswered_CurrentBehaviour brings a client to resume a
// charge with GET and Last-Event-ID, in each way it resumes (every client
// after a clean end; a client that resumes broken streams after a cut of
// the go-sdk server's stream too), and answers the resume with a status. A
// 200 resumes the call. Any other answer is not retried, whatever the
// status (a 503 the spec calls transient, the 400 SDK servers send for an
// evicted id, a 404 for the session): the call fails, its outcome is
// unknown, and the next call goes out on the session, unless the client
// ended it (the go-sdk ends it on any status, mcp-go on a 404): then the
// old session is recorded lost (status_404 after a 404, abandoned
// otherwise) and the next call gets a new one.
func TestClientResumeAnswered_CurrentBehaviour(t *testing.T) {
	statuses := []int{http.StatusOK, http.StatusServiceUnavailable, http.StatusBadRequest, http.StatusNotFound}
	eachClient(t, func(t *testing.T, c clientTarget) {
		for _, way := range resumeWays {
			if way.broken && !c.resumesBroken {
				continue
			}
			for _, status := range statuses {
				t.Run(way.name+"/"+http.StatusText(status), func(t *testing.T) {
					t.Parallel()
					w := newWatch()
					url := way.start(t, w, status)
					recs := runWatched(t, c.run, url, w, charge("c1", 200*time.Millisecond), charge("c2", time.Millisecond))
					resumeAnswered(t, c, way, status, recs)
				})
			}
		}
	})
}

func resumeAnswered(t *testing.T, c clientTarget, way resumeWay, status int, recs []history.Record) {
	lost := status != http.StatusOK && (c.resumeRefusalEndsSession || status == http.StatusNotFound)
	want := []history.Kind{history.KindClientStart, history.KindSessionNew, history.KindInvoke,
		history.KindStreamBreak, history.KindReconnect}
	switch {
	case status == http.StatusOK:
		want = append(want, history.KindResume, history.KindOK)
	case lost:
		want = append(want, history.KindUnknown, history.KindSessionLost, history.KindSessionNew)
	default:
		want = append(want, history.KindUnknown)
	}
	want = append(want, history.KindInvoke, history.KindOK, history.KindClientStop)
	// The event and the end of the stream can arrive in one read, so the
	// break may be recorded before the SDK hands the event over.
	assert.Equal(t, want, withoutEvents(recs))
	assert.Equal(t, way.events, events(recs))
	assert.Equal(t, "eof", only(recs, history.KindStreamBreak)[0].Reason)
	rc := only(recs, history.KindReconnect)[0]
	assert.Equal(t, way.lastEventID, rc.LastEventID)
	if status == http.StatusOK {
		assert.Equal(t, "ok", rc.Result)
		return
	}
	assert.Equal(t, fmt.Sprintf("status_%d", status), rc.Result)
	assert.Equal(t, rc.Result, only(recs, history.KindUnknown)[0].Reason)
	if !lost {
		return
	}
	why := "abandoned"
	if status == http.StatusNotFound {
		why = "status_404"
	}
	assert.Equal(t, why, only(recs, history.KindSessionLost)[0].Reason)
	sessions := only(recs, history.KindSessionNew)
	assert.NotEqual(t, sessions[0].Session, sessions[1].Session)
}

func TestRunClientWithoutHistory(t *testing.T) {
	eachClient(t, func(t *testing.T, c clientTarget) {
		err := c.run(context.Background(), workload.Options{Endpoint: "http://127.0.0.1:1/mcp"}, workload.Client{ID: "x"})
		require.ErrorIs(t, err, sdkclient.ErrNoHistory)
	})
}

// TestRunClientServerDown records a call the client could not even
// initialize for as failed and not sent.
func TestRunClientServerDown(t *testing.T) {
	eachClient(t, func(t *testing.T, c clientTarget) {
		recs := runClient(t, c.run, "http://127.0.0.1:1/mcp", charge("c1", 0))
		assert.Equal(t, []history.Kind{history.KindClientStart, history.KindInvoke, history.KindFail,
			history.KindClientStop}, historyKinds(recs))
		assert.Equal(t, "not_sent", recs[2].Reason)
	})
}

// TestClientModernAfterCut_CurrentBehaviour runs each client that speaks
// 2026-07-28 against each server that does, and cuts the connection while
// the first of two charges runs. The go-sdk client connects with
// server/discover (no session, no initialize), and after the cut it does
// not resume (there is nothing to resume at 2026-07-28) nor re-issue the
// call: the call fails at once and the adapter records its outcome
// unknown. The next call goes out on the same connection, as the first
// send of its own. What the cut call did on the server differs: the
// reference server takes the closed stream as cancellation (and, with
// on_cancel: stop, does not charge); the go-sdk server charges anyway.
func TestClientModernAfterCut_CurrentBehaviour(t *testing.T) {
	speaksModern := func(c clientTarget, srv serverTarget) bool { return c.modern && srv.modern }
	eachPairWhere(t, speaksModern, func(t *testing.T, c clientTarget, srv serverTarget) {
		l := sideeffects.NewMemory()
		p := newProxy(t, serve(t, srv, serverConfig{recorder: l, stateless: true}))
		w := newWatch()
		cutWhen(t, p, w, l.Next(kindIs(sideeffects.KindCallStarted)), nil)
		recs := runWatched(t, atVersion(c.run, mcp.Version20260728), p.URL+"/mcp", w,
			charge("c1", 300*time.Millisecond), charge("c2", 5*time.Millisecond))
		awaitCount(t, l, sideeffects.KindCallFinished, 2, "both charges to finish")

		assert.Equal(t, []history.Kind{
			history.KindClientStart, history.KindSessionNew,
			history.KindInvoke, history.KindStreamBreak, history.KindUnknown,
			history.KindInvoke, history.KindOK, history.KindClientStop,
		}, historyKinds(recs))
		sn := only(recs, history.KindSessionNew)[0]
		assert.Empty(t, sn.Session, "no session at 2026-07-28")
		assert.Equal(t, mcp.Version20260728, sn.Protocol)
		assert.Equal(t, 2, l.Count(sideeffects.KindCallStarted), "the cut call was not issued again")
		cancelled, charges := 0, 2
		if srv.cancelsClosedStream {
			cancelled, charges = 1, 1
		}
		assert.Equal(t, cancelled, l.Count(sideeffects.KindCallCancelled))
		assert.Equal(t, charges, l.Count(sideeffects.KindCharge))
		assert.Equal(t, "eof", only(recs, history.KindUnknown)[0].Reason)
	})
}

// TestResumableClientAgainstServer runs the reference resumable client
// against each SDK's server.
func TestResumableClientAgainstServer(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
		recs := runClient(t, resumable, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

		assert.Equal(t, []history.Kind{history.KindInvoke, history.KindOK, history.KindInvoke, history.KindOK},
			onlyKinds(recs, history.KindInvoke, history.KindOK, history.KindUnknown, history.KindFail))
		// The resumable client records every event it reads; progress ones
		// carry their sequence number.
		assert.Equal(t, []int64{1, 2, 3}, slices.DeleteFunc(events(recs), func(seq int64) bool { return seq == 0 }))
		assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
		assert.Equal(t, s.name, l.Of(sideeffects.KindCharge)[0].Source)
	})
}

// TestResumableClientAgainstServerAfterCut cuts a charge of the reference
// resumable client on each SDK's server. Where the server primes its
// stream, the cut comes once the priming event has arrived, and the client
// resumes from it and gets the original result. mcp-go answers a call
// without notifications with one JSON body at the end: there is no event
// id to resume from, so even the resumable client can only call the
// outcome unknown, while the tool charges and its result goes nowhere.
// One charge either way.
func TestResumableClientAgainstServerAfterCut(t *testing.T) {
	eachSDK(t, func(t *testing.T, s sdk) {
		_, l, url := startServer(t, s, serverConfig{})
		p := newProxy(t, url)
		w := newWatch()
		trigger := l.Next(kindIs(sideeffects.KindCallStarted))
		if s.server.primes {
			trigger = w.answering()
		}
		go func() {
			await(t, trigger, "the charge to be under way")
			p.cut(t)
		}()
		recs := runWatched(t, resumable, p.URL+"/mcp", w, charge("c1", 300*time.Millisecond))
		awaitCount(t, l, sideeffects.KindResultWritten, 1, "the charge's result")

		want := []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindUnknown}
		if s.server.primes {
			want = []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindResume, history.KindOK}
		}
		assert.Equal(t, want, onlyKinds(recs, history.KindInvoke, history.KindStreamBreak, history.KindResume,
			history.KindOK, history.KindUnknown, history.KindFail))
		assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	})
}

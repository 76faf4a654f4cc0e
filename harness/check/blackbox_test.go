package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// What a client judged from the wire alone (no history of its own) shows,
// and what it does not: how it ended a call whose answer never came, and
// whether it surfaced a result it never got, are its own business.
func TestAClientOfItsOwnIsJudgedOnWhatTheWireShows(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", true).event("3")
	w.at(2).cut()
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindReset, Target: "proxy", StartUS: 1_900_000, EndUS: 1_910_000}}
	v := Judge(in)
	res, _ := v.Result(OutcomesResolved)
	assert.Equal(t, CannotTell, res.Status, "no answer came: whether the client gave the call up as failed or unknown, the wire cannot see")
	orphans, _ := v.Result(NoOrphanedResults)
	assert.Equal(t, CannotTell, orphans.Status, orphans.Summary)
	assert.Equal(t, Unknown, v.Provenance["calls_unresolved"].Kind)
	assert.Equal(t, UpperBound, v.Provenance["calls_ok"].Kind)

	// A second invocation of the same operation is a blind retry
	// whatever the client concluded: that the wire sees.
	w.at(3).post("sA", toolsCall("4", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("4", false))
	in.Wire = mirrored(w.recs)
	res, _ = Judge(in).Result(OutcomesResolved)
	assert.Equal(t, Violated, res.Status, res.Summary)
}

// A 503 in the place of a call's answer broke the call: the fault hit.
func TestA5xxInPlaceOfTheAnswerIsABreak(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "greet", `{"name":"x"}`)).answer(503, "", false)
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindHTTPStatus, Target: "proxy", StartUS: 500_000, EndUS: 5_000_000}}
	hist, _ := historyFromWire(in.Wire, nil)
	require.Contains(t, kindsOf(hist), history.KindStreamBreak)
	hit, _ := Judge(in).Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
}

// A call that became a task ends with what tasks/get hands out; a task the
// server forgot breaks it, and the client was told its answer is lost.
func TestATaskIsFollowedToItsOutcomeOrItsLoss(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "charge", `{"order_id":"o1"}`)).answer(200, "", false,
		wire.Message{ID: "2", Response: true, ResultType: "task", TaskID: "t1", TaskStatus: "working"})
	w.at(2).post("sA", wire.Message{ID: "3", Method: "tasks/get", TaskID: "t1"}).answer(200, "", false,
		wire.Message{ID: "3", Response: true, IsError: true, ErrorCode: -32602, ErrorMessage: "task not found"})
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindDropTasks, Target: "server", StartUS: 1_500_000, EndUS: 1_500_000}}
	hist, _ := historyFromWire(in.Wire, nil)
	kinds := kindsOf(hist)
	assert.Contains(t, kinds, history.KindTask)
	assert.NotContains(t, kinds, history.KindOK, "a task handle is no outcome")
	assert.Contains(t, kinds, history.KindStreamBreak, "the task lost")
	assert.Equal(t, history.KindUnknown, hist[len(hist)-1].Kind, "the client was told its answer is lost")
	hit, _ := Judge(in).Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)

	w.recs = w.recs[:len(w.recs)-1]
	w.answer(200, "", false, wire.Message{ID: "3", Response: true, ResultType: "complete", TaskID: "t1", TaskStatus: "completed"})
	hist, _ = historyFromWire(mirrored(w.recs), nil)
	assert.Equal(t, history.KindOK, hist[len(hist)-1].Kind, "the completed task's result is the call's outcome")
}

// A request that reached a server while it was being restarted, and got no
// answer, may never have run: its charge is uncertain, and no result is
// derived for it.
func TestARequestDuringARestartMayNeverHaveRun(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(2).post("sA", toolsCall("2", "charge", `{"order_id":"o1"}`))
	w.at(2.5).cut()
	log := []faults.Entry{{Index: 0, Kind: faults.KindRestart, Target: "server", Params: map[string]any{"graceful": true}, StartUS: 1_000_000, EndUS: 3_000_000}}
	wl := ledgerFromWire(w.recs, nil, log, nil)
	for _, r := range wl.records {
		if r.Kind == "charge" {
			assert.Contains(t, wl.uncertain[r.ID], "while it was being restarted")
		}
		assert.NotEqual(t, "result_written", string(r.Kind), "no result is derived for a call that may never have run")
	}
}

// Requests of one operation named by its key count as one call: the count
// is a lower bound, since some may have been calls of their own.
func TestRepeatedKeyedOperationsMakeTheCallsALowerBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("2", false))
	w.at(2).post("sA", toolsCall("3", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("3", false))
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 500_000, EndUS: 3_000_000}}
	v := Judge(in)
	assert.Equal(t, int64(1), v.Figures.Calls)
	assert.Equal(t, LowerBound, v.Provenance["calls"].Kind, v.Provenance["calls"].Why)
}

// A stream that broke before its result may have carried events nothing
// saw, even when none crossed: zero emitted is a lower bound.
func TestABrokenStreamWithNoEventsMakesEmittedALowerBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "longRunningOperation", `{"steps":5}`)).answer(200, "", true)
	w.at(2).cut()
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindIdleTimeout, Target: "proxy", StartUS: 0, EndUS: 5_000_000}}
	v := Judge(in)
	assert.Zero(t, v.Figures.EventsEmitted)
	assert.Equal(t, LowerBound, v.Provenance["events_emitted"].Kind)
}

// Events delivered after their call's answer may be dropped by the client:
// what the wire counts received is an upper bound.
func TestEventsAfterTheAnswerMakeReceivedAnUpperBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "export", `{}`)).answer(200, "", true).event("", progress("2", 1, 2)).event("", result("2", false)).event("", progress("2", 2, 2))
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 500_000, EndUS: 3_000_000}}
	v := Judge(in)
	assert.Equal(t, UpperBound, v.Provenance["events_received"].Kind)
}

// A client that gives a call up tells the server so (notifications/
// cancelled): the call broke under the fault, the client reported it
// failed, and the result that came after was never read — while the
// charge it reports failed was made.
func TestACallTheClientCancelledWasGivenUp(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.5).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", true)
	first := w.conn
	w.at(1.5).post("sA", wire.Message{Method: "notifications/cancelled", RequestID: "2"}).answer(202, "", false)
	w.conn = first
	w.at(2).event("", result("2", false))
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 400_000, EndUS: 3_000_000}}
	hist, _ := historyFromWire(in.Wire, in.Ops)
	kinds := kindsOf(hist)
	assert.Contains(t, kinds, history.KindStreamBreak)
	assert.NotContains(t, kinds, history.KindOK, "the answer after the cancellation is not read")
	v := Judge(in)
	hit, _ := v.Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	orphans, _ := v.Result(NoOrphanedResults)
	assert.Equal(t, Violated, orphans.Status, orphans.Summary)
	res, _ := v.Result(OutcomesResolved)
	assert.Equal(t, Violated, res.Status, "reported failed, yet the order ran to its end: %s", res.Summary)
	assert.Equal(t, int64(1), v.Figures.OrphanedResults)
}

// A connection the client opened and the proxy cut before any request
// crossed it (its server was down) is a request of the client's process
// failing under the fault: a break of every client that has made a call.
func TestAConnectionCutBeforeItsRequestIsABreak(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.5).post("sA", toolsCall("2", "charge", `{"order_id":"o9"}`)).answer(200, "", false, result("2", false))
	w.at(1).post("sA", toolsCall("3", "charge", `{"order_id":"o9"}`)).answer(200, "", false, result("3", false))
	recs := mirrored(w.recs)
	recs = append(recs, wire.Record{N: int64(len(recs) + 1), TUS: 1_300_000, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindOpen},
		wire.Record{N: int64(len(recs) + 2), TUS: 1_300_100, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindClose, End: wire.EndRST, By: wire.SideServer,
			Detail: "dial: connect: connection refused"})
	w.at(2).post("sA", toolsCall("4", "charge", `{"order_id":"o9"}`)).answer(200, "", false, result("4", false))
	for _, r := range mirrored(w.recs[len(w.recs)-2:]) {
		r.N = int64(len(recs) + 1)
		recs = append(recs, r)
	}
	in := Input{Wire: recs}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindCrash, Target: "server", StartUS: 1_200_000, EndUS: 1_400_000}}
	hit, _ := Judge(in).Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	assert.Contains(t, hit.Evidence[0].Text, "stream_break reset")
}

// The same cut among calls that are each their own (no key) and all
// answered: no call the wire saw was in flight, yet a request of the
// client's failed under the fault, and the fault hit.
func TestACutBeforeAnyRequestHitsEvenWithNoCallInFlight(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.5).post("sA", toolsCall("2", "cityTime", `{"city":"nyc"}`)).answer(200, "", false, result("2", false))
	recs := mirrored(w.recs)
	recs = append(recs, wire.Record{N: int64(len(recs) + 1), TUS: 1_300_000, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindOpen},
		wire.Record{N: int64(len(recs) + 2), TUS: 1_300_100, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindClose, End: wire.EndRST, By: wire.SideServer,
			Detail: "dial: connect: connection refused"})
	in := Input{Wire: recs}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindCrash, Target: "server", StartUS: 1_200_000, EndUS: 1_400_000}}
	v := Judge(in)
	hit, _ := v.Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	assert.Contains(t, hit.Evidence[0].Text, "before its request crossed")
	assert.NotEqual(t, Inconclusive, v.Verdict)
}

// A cut before any call crossed is a client failing at connect: the
// request cut was its first, an initialize, and no call was in flight. A
// client of the user's own that died of it is reported (client_survived),
// and the fault hit no call.
func TestACutBeforeTheFirstCallHitsNoCall(t *testing.T) {
	var recs []wire.Record
	for conn := int64(1); conn <= 3; conn++ {
		recs = append(recs, wire.Record{N: int64(len(recs) + 1), TUS: 4_893_000, Edge: wire.EdgeClient, Conn: conn, Kind: wire.KindOpen},
			wire.Record{N: int64(len(recs) + 2), TUS: 4_896_000, Edge: wire.EdgeClient, Conn: conn, Kind: wire.KindClose, End: wire.EndError, By: wire.SideServer,
				Detail: "dial: dial tcp: lookup server on 127.0.0.11:53: no such host"})
	}
	in := Input{Wire: recs, ClientExit: &ClientExit{Code: 1, Status: "exit status 1", TUS: 4_910_000, Tail: []string{`calling "initialize": ... connection reset by peer`}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindCrash, Target: "server", StartUS: 4_129_000, EndUS: 6_180_000}}
	v := Judge(in)
	hit, _ := v.Result(FaultHit)
	assert.False(t, hit.Held(), hit.Summary)
	assert.Equal(t, Inconclusive, v.Verdict)
	survived, _ := v.Result(ClientSurvived)
	assert.Equal(t, Violated, survived.Status, "the client the fault brought down is a finding")
}

// Past its initialize, a client's next request may be a call: a cut
// before it crossed is a hit, as the go-sdk loadtest's workers showed,
// whose tools/call a crashed server's proxy reset after their sessions
// opened.
func TestACutAfterTheSessionOpenedHitsAsACall(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	recs := mirrored(w.recs)
	recs = append(recs, wire.Record{N: int64(len(recs) + 1), TUS: 1_300_000, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindOpen},
		wire.Record{N: int64(len(recs) + 2), TUS: 1_300_100, Edge: wire.EdgeClient, Conn: 99, Kind: wire.KindClose, End: wire.EndRST, By: wire.SideServer,
			Detail: "dial: connect: connection refused"})
	in := Input{Wire: recs, ClientExit: &ClientExit{Code: 0, Status: "exit status 0", TUS: 1_400_000}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindCrash, Target: "server", StartUS: 1_200_000, EndUS: 1_400_000}}
	hit, _ := Judge(in).Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	assert.Contains(t, hit.Evidence[0].Text, "before its request crossed")
}

package check

import (
	"encoding/json"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// wireLog builds the server edge of a hand-written wire record, numbering
// lines and exchanges.
type wireLog struct {
	recs []wire.Record
	conn int64
	now  int64
}

func (w *wireLog) at(sec float64) *wireLog {
	w.now = int64(sec * 1e6)
	return w
}

func (w *wireLog) add(r wire.Record) *wireLog {
	r.N, r.TUS, r.Edge = int64(len(w.recs)+1), w.now, wire.EdgeServer
	w.recs = append(w.recs, r)
	return w
}

// post opens a connection carrying one POST of msg on session.
func (w *wireLog) post(session string, msg wire.Message) *wireLog {
	w.conn++
	return w.add(wire.Record{Kind: wire.KindRequest, Conn: w.conn, Exchange: 1, Method: "POST", Path: "/mcp",
		Header: &wire.Header{SessionID: session}, Messages: []wire.Message{msg}})
}

func (w *wireLog) get(session, lastEventID string) *wireLog {
	w.conn++
	return w.add(wire.Record{Kind: wire.KindRequest, Conn: w.conn, Exchange: 1, Method: "GET", Path: "/mcp",
		Header: &wire.Header{SessionID: session, LastEventID: lastEventID}})
}

// answer answers the last connection's request with status, a session id
// header and an SSE or JSON body.
func (w *wireLog) answer(status int, session string, sse bool, msgs ...wire.Message) *wireLog {
	ct := "application/json"
	if sse {
		ct = "text/event-stream"
	}
	return w.add(wire.Record{Kind: wire.KindResponse, Conn: w.conn, Exchange: 1, Status: status,
		Header: &wire.Header{SessionID: session, ContentType: ct}, Messages: msgs})
}

func (w *wireLog) event(id string, msgs ...wire.Message) *wireLog {
	return w.add(wire.Record{Kind: wire.KindEvent, Conn: w.conn, Exchange: 1, EventID: id, Priming: len(msgs) == 0, Messages: msgs})
}

func (w *wireLog) cut() *wireLog {
	return w.add(wire.Record{Kind: wire.KindClose, Conn: w.conn, End: wire.EndRST, By: wire.SideClient})
}

func initialize(client string) wire.Message {
	return wire.Message{ID: "1", Method: "initialize", ClientName: client, Protocol: "2025-11-25"}
}

func toolsCall(id, tool, args string) wire.Message {
	return wire.Message{ID: id, Method: "tools/call", Tool: tool, Args: json.RawMessage(args), ArgsDigest: "d-" + args, ProgressToken: id}
}

func result(id string, isError bool) wire.Message {
	return wire.Message{ID: id, Response: true, IsError: isError}
}

func progress(token string, p, total float64) wire.Message {
	return wire.Message{Method: "notifications/progress", ProgressToken: token, Progress: &p, Total: &total}
}

// doubleChargeWire is the server edge of the double-charge incident: the
// first charge is cut 60 s in and its result never crosses the edge; the
// client initializes again and charges again.
func doubleChargeWire() []wire.Record {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(0.1).post("sA", toolsCall("2", "charge", `{"order_id":"pay-1","amount_cents":4999}`)).answer(200, "", true).event("3")
	w.at(60.1).cut()
	w.at(60.2).post("", initialize("c1")).answer(200, "sB", true).event("1", result("1", false))
	w.at(60.3).post("sB", toolsCall("2", "charge", `{"order_id":"pay-1","amount_cents":4999}`)).answer(200, "", true).event("1")
	w.at(150.3).event("2", result("2", false))
	return w.recs
}

func TestLedgerFromWireDerivesTheIncident(t *testing.T) {
	led := ledgerFromWire(doubleChargeWire(), nil, nil, nil).records
	kinds := map[sideeffects.Kind]int{}
	for _, r := range led {
		assert.Equal(t, SourceWire, r.Source)
		assert.NotZero(t, r.N, "every derived record names its wire record")
		kinds[r.Kind]++
	}
	assert.Equal(t, map[sideeffects.Kind]int{
		sideeffects.KindSessionOpened: 2, sideeffects.KindCallStarted: 2, sideeffects.KindCharge: 2, sideeffects.KindResultWritten: 2,
	}, kinds, "two sessions, two invocations of one order, one result seen and one derived for the cut call")

	in := doubleChargeNaive()
	in.Ledger, in.Wire = nil, doubleChargeWire()
	v := Judge(in)
	assert.Equal(t, Fail, v.Verdict)
	assert.Equal(t, []string{NoDuplicateSideEffects, NoSessionFork, NoOrphanedResults, OutcomesResolved}, v.Violations,
		"the wire alone finds what the ledger finds")
	for _, r := range v.Invariants {
		if r.Status != NotJudged {
			assert.Equal(t, AccountWire, r.Account, r.ID)
		}
	}
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, []string{"wire records 4, 11: order pay-1 charged 2 times"}, texts(dup.Evidence))
}

func TestBothAccountsAgreeOnTheIncident(t *testing.T) {
	in := doubleChargeNaive()
	in.Wire = doubleChargeWire()
	v := Judge(in)
	assert.Equal(t, []string{NoDuplicateSideEffects, NoSessionFork, NoOrphanedResults, OutcomesResolved}, v.Violations)
	for _, r := range v.Invariants {
		if r.Status == NotJudged {
			continue
		}
		assert.Equal(t, AccountBoth, r.Account, r.ID)
		assert.Empty(t, r.Disagreement, r.ID)
	}
}

func TestADisagreementIsReportedAndFailsTheExpectation(t *testing.T) {
	in := doubleChargeNaive()
	w := &wireLog{} // a wire that saw only the second session
	w.at(60.2).post("", initialize("c1")).answer(200, "sB", true).event("1", result("1", false))
	w.at(60.3).post("sB", toolsCall("2", "charge", `{"order_id":"pay-1"}`)).answer(200, "", true)
	w.at(150.3).event("2", result("2", false))
	in.Wire = w.recs
	v := Judge(in)
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, Violated, dup.Status, "the ledger's account stands")
	assert.Contains(t, dup.Disagreement, "the wire's account says held")
	ok, reasons := Expectation{Verdict: Fail}.Match(v)
	assert.False(t, ok)
	assert.Contains(t, reasons[0], "the accounts disagree on no_duplicate_side_effects")
}

// end ends the body of the last connection's exchange.
func (w *wireLog) end() *wireLog {
	return w.add(wire.Record{Kind: wire.KindBodyEnd, Conn: w.conn, Exchange: 1})
}

func TestLedgerFromWireDerivesEventsFromSkippedIds(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false)).end()
	w.at(0.1).post("sA", toolsCall("2", "chatty", `{"events":6}`)).answer(200, "", true).event("3")
	w.event("4", progress("2", 1, 6)).event("5", progress("2", 2, 6)).cut()
	w.at(100).get("sA", "5").answer(200, "", true)
	w.event("9", progress("2", 6, 6)).event("10", result("2", false))
	wl := ledgerFromWire(w.recs, nil, nil, nil)
	var seqs, ids []int64
	derived := 0
	for _, r := range wl.records {
		if r.Kind == sideeffects.KindEventEmitted {
			seqs, ids = append(seqs, r.Seq), append(ids, r.EventID)
			if wl.derived[r.ID] != "" {
				derived++
				assert.Contains(t, wl.derived[r.ID], "its ids count one by one")
			}
		}
	}
	assert.ElementsMatch(t, []int64{4, 5, 9, 6, 7, 8}, ids, "ids 6, 7 and 8 never crossed the edge: the resume began at 9, and the ids count one by one")
	assert.Equal(t, ids, seqs, "a stream with numeric ids places its events by them")
	assert.Equal(t, 3, derived)
	assert.Contains(t, wl.sight[StreamKey{Session: "sA", RequestID: "2"}].Partial, "ids number only the events the server kept",
		"the ids prove what was emitted while the stream was away, not that nothing more was")

	// The client saw 4, 5 and 9 and no gap: the server resumed it past
	// what it had emitted without a word.
	r := newRun().fault("partition", "proxy", 10, 90)
	r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").invoke("c1", "chat", "chatty", "sA", "2", 1)
	r.event("c1", "chat", "sA", "2", 4, 1).event("c1", "chat", "sA", "2", 5, 2)
	r.at(10).broke("c1", "chat", "sA", "2", "reset")
	r.at(100).reconnect("c1", "chat", "sA", "2", 5, "ok").resume("c1", "chat", "sA", "2", 5)
	r.event("c1", "chat", "sA", "2", 9, 6).outcome(history.KindOK, "c1", "chat", "sA", "2", 10)
	r.in.Wire = w.recs
	v := Judge(r.in)
	loss, _ := v.Result(NoSilentEventLoss)
	assert.Equal(t, Violated, loss.Status)
	assert.Equal(t, AccountWire, loss.Account)
	assert.Equal(t, int64(3), v.Figures.EventsLostSilent)
	assert.Equal(t, LowerBound, v.Provenance["events_emitted"].Kind, "the server may have emitted events it never numbered")

	// Without ids the same stream cannot say what it missed: the figure is
	// a lower bound, and the loss cannot be told.
	for i := range w.recs {
		w.recs[i].EventID = ""
		if w.recs[i].Header != nil {
			w.recs[i].Header.LastEventID = ""
		}
	}
	for i := range r.in.History {
		r.in.History[i].EventID, r.in.History[i].LastEventID = 0, 0
	}
	r.in.Wire = w.recs
	v = Judge(r.in)
	loss, _ = v.Result(NoSilentEventLoss)
	assert.Equal(t, CannotTell, loss.Status, loss.Summary)
	assert.Equal(t, LowerBound, v.Provenance["events_emitted"].Kind)
	assert.Equal(t, int64(3), v.Figures.EventsEmitted, "what crossed the server edge, and no more")
}

func TestLedgerFromWireLeavesOutWhatTheServerRefused(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(1).post("sA", toolsCall("2", "hello", `{}`)).answer(200, "", false,
		wire.Message{ID: "2", Response: true, IsError: true, ErrorCode: -32602, ErrorMessage: `unknown tool "hello"`})
	w.at(2).post("sB", toolsCall("3", "charge", `{"order_id":"x"}`)).answer(404, "", false)
	led := ledgerFromWire(w.recs, nil, nil, nil).records
	for _, r := range led {
		assert.NotEqual(t, sideeffects.KindCallStarted, r.Kind, "no call ran: %+v", r)
		assert.NotEqual(t, sideeffects.KindCharge, r.Kind)
	}
}

func TestLedgerFromWireKeepsACallThatRanAndEndedInAnError(t *testing.T) {
	rpcError := func(id string, code int) wire.Message {
		return wire.Message{ID: id, Response: true, IsError: true, ErrorCode: code, ErrorMessage: "failed"}
	}
	tests := []struct {
		name string
		code int
		rows int // progress events before the error
		ran  bool
	}{
		{"invalid params, nothing streamed: turned away", -32602, 0, false},
		{"unknown method: turned away", -32601, 0, false},
		{"internal error after progress (mcp-go's full notification queue)", -32603, 2, true},
		{"invalid params after progress: the tool ran", -32602, 1, true},
		{"internal error, nothing streamed: the tool may have run", -32603, 0, true},
		{"a server's own code: the tool may have run", -32001, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &wireLog{}
			w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
			w.at(1).post("sA", toolsCall("2", "export", `{}`)).answer(200, "", true)
			for i := 1; i <= tc.rows; i++ {
				w.event(strconv.Itoa(i+1), progress("2", float64(i), 10))
			}
			w.event("99", rpcError("2", tc.code))
			started, events := 0, 0
			for _, r := range ledgerFromWire(w.recs, nil, nil, nil).records {
				switch r.Kind {
				case sideeffects.KindCallStarted:
					started++
				case sideeffects.KindEventEmitted:
					events++
				}
			}
			if !tc.ran {
				assert.Zero(t, started, "a call the server turned away never ran")
				return
			}
			assert.Equal(t, 1, started, "the call ran")
			assert.Equal(t, tc.rows, events, "and its progress is counted")
		})
	}
}

func TestLedgerFromWireDerivesNoResultForACallTheServerDiedWith(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(1).post("sA", toolsCall("2", "charge", `{"order_id":"x"}`)).answer(200, "", true).event("3").cut()
	written := func(kills []int64) int {
		n := 0
		var log []faults.Entry
		for _, k := range kills {
			log = append(log, faults.Entry{Kind: faults.KindCrash, Target: "server", StartUS: k, EndUS: k})
		}
		for _, r := range ledgerFromWire(w.recs, nil, log, nil).records {
			if r.Kind == sideeffects.KindResultWritten {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 1, written(nil), "a tool keeps running when its connection drops: its result went somewhere")
	assert.Equal(t, 0, written([]int64{1_500_000}), "a crash after the call began may have taken it along")
}

func TestOpsTellOperationsApart(t *testing.T) {
	ops := Ops{{Tool: "book", Key: "trip.id"}, {Tool: "lookup", Idempotent: true}}
	assert.Equal(t, "t-1", ops.Key("book", json.RawMessage(`{"trip":{"id":"t-1"},"seat":3}`), "dd"))
	assert.Equal(t, "book#dd", ops.Key("book", json.RawMessage(`{"seat":3}`), "dd"), "no value at the path: the arguments' digest")
	assert.Equal(t, "pay-1", ops.Key("charge", json.RawMessage(`{"order_id":"pay-1"}`), "dd"), "the built-in charge keys by order")
	assert.Equal(t, "lookup#dd", ops.Key("lookup", nil, "dd"))
	assert.False(t, ops.Idempotent("book", nil))
	assert.True(t, ops.Idempotent("lookup", nil))
	assert.False(t, ops.Idempotent("charge", json.RawMessage(`{"order_id":"a"}`)))
	assert.True(t, ops.Idempotent("charge", json.RawMessage(`{"order_id":"a","idempotency_key":"k"}`)))
	assert.False(t, ops.Idempotent("unknown", nil), "a tool nobody vouched for is not idempotent")
	require.True(t, ops.Idempotent("chatty", nil))
}

// mirrored is a wire record in which the client edge saw what the server
// edge did (nothing the proxy answered itself, nothing it held back), with
// the closes as the client saw them: by the proxy, for the server's side.
func mirrored(server []wire.Record) []wire.Record {
	var out []wire.Record
	for _, r := range server {
		c := r
		c.Edge = wire.EdgeClient
		if c.Kind == wire.KindClose {
			c.By = wire.SideServer
		}
		out = append(out, r, c)
	}
	for i := range out {
		out[i].N = int64(i + 1)
	}
	return out
}

func TestHistoryFromWireJudgesAClientOfTheUsersOwn(t *testing.T) {
	in := Input{Wire: mirrored(doubleChargeWire())}
	in.Faults = doubleChargeNaive().Faults
	hist, lines := historyFromWire(in.Wire, nil)
	var kinds []history.Kind
	for _, h := range hist {
		kinds = append(kinds, h.Kind)
	}
	assert.Equal(t, []history.Kind{history.KindSessionNew, history.KindInvoke, history.KindStreamBreak,
		history.KindSessionNew, history.KindInvoke, history.KindOK}, kinds)
	assert.Equal(t, 2, hist[4].Attempt, "a second invoke of the same operation is its second attempt")
	assert.Equal(t, "pay-1", hist[4].Call)
	require.Len(t, lines, len(hist))

	v := Judge(in)
	assert.Equal(t, Fail, v.Verdict)
	assert.Equal(t, []string{NoDuplicateSideEffects, OutcomesResolved}, v.Violations,
		"the wire alone, at both edges, finds the incident: the order charged twice, retried blindly")
	assert.Equal(t, []string{NoSessionFork, NoOrphanedResults}, v.CannotTell,
		"the two sessions share a client name, and nothing but the name ties them to one client; "+
			"whether the client surfaced the result it never got, the wire cannot see")
	hit, _ := v.Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	assert.Contains(t, hit.Evidence[0].Text, "wire record", "the evidence names wire records, not a history file")
	res, _ := v.Result(OutcomesResolved)
	assert.Contains(t, res.Evidence[0].Text, "wire records")
}

func TestHistoryFromWireSurfacesWhatTheServerSaidWasLost(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(1).post("sA", toolsCall("2", "charge", `{"order_id":"x"}`)).answer(200, "", true).event("3").cut()
	w.at(700).get("sA", "3").answer(404, "", false)
	hist, _ := historyFromWire(mirrored(w.recs), nil)
	last := hist[len(hist)-1]
	assert.Equal(t, history.KindUnknown, last.Kind, "the client was told its session is gone: its call's answer is lost, not silently dropped")
	assert.Contains(t, kindsOf(hist), history.KindSessionLost)
	assert.Contains(t, kindsOf(hist), history.KindReconnect)
}

func kindsOf(hist []history.Record) []history.Kind {
	var out []history.Kind
	for _, h := range hist {
		out = append(out, h.Kind)
	}
	return out
}

func TestAForkTheWireCannotRuleOutIsNotADisagreement(t *testing.T) {
	// The server expires session sA while the client is cut off; the client
	// never asks about it again, so no wire carries the expiry.
	r := newRun().fault("partition", "proxy", 30, 300)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(31).broke("c1", "pay-1", "sA", "2", "reset")
	r.at(90).closed("sA", "expired")
	r.at(180).led(sideeffects.Record{Kind: sideeffects.KindResultDropped, Session: "sA", RequestID: "2", Reason: "session_gone"})
	r.at(300.5).opened("sB", "c1").sessionNew("c1", "sB")
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(0.1).post("sA", toolsCall("2", "charge", `{"order_id":"pay-1"}`)).answer(200, "", true).event("3").cut()
	w.at(300.5).post("", initialize("c1")).answer(200, "sB", true).event("1", result("1", false))
	r.in.Wire = w.recs
	v := Judge(r.in)
	fork, _ := v.Result(NoSessionFork)
	assert.Equal(t, Held, fork.Status, "the ledger saw sA expire before sB opened")
	assert.Empty(t, fork.Disagreement)
	assert.Contains(t, fork.Unseen, "session sA ended at 90.000s by the ledger, never seen to end on the wire")
	ok, reasons := Expectation{Verdict: v.Verdict}.Match(v)
	assert.True(t, ok, reasons)

	// Without the ledger, the wire presumes sA live: a possible fork.
	r.in.Ledger = nil
	fork, _ = Judge(r.in).Result(NoSessionFork)
	assert.Equal(t, Violated, fork.Status)
}

func TestInExchangeOrderPutsAnswersAfterTheirRequest(t *testing.T) {
	req := func(n, conn int64) wire.Record {
		return wire.Record{N: n, Edge: wire.EdgeServer, Conn: conn, Exchange: 1, Kind: wire.KindRequest}
	}
	ans := func(n, conn int64, kind wire.Kind) wire.Record {
		return wire.Record{N: n, Edge: wire.EdgeServer, Conn: conn, Exchange: 1, Kind: kind}
	}
	open := func(n, conn int64) wire.Record {
		return wire.Record{N: n, Edge: wire.EdgeServer, Conn: conn, Kind: wire.KindOpen}
	}
	other := func(r wire.Record) wire.Record { r.Edge = wire.EdgeClient; return r }
	tests := []struct {
		name string
		in   []wire.Record
		want []int64 // the n of each record, in the order returned
	}{
		{"in order", []wire.Record{open(1, 1), req(2, 1), ans(3, 1, wire.KindResponse), ans(4, 1, wire.KindEvent)}, []int64{1, 2, 3, 4}},
		{"an answer recorded before its request",
			[]wire.Record{open(1, 7), ans(2, 7, wire.KindResponse), ans(3, 7, wire.KindEvent), ans(4, 7, wire.KindBodyEnd), req(5, 7), open(6, 8)},
			[]int64{1, 5, 2, 3, 4, 6}},
		{"the same connection and exchange on the other edge is another exchange",
			[]wire.Record{other(req(1, 7)), ans(2, 7, wire.KindResponse), req(3, 7)}, []int64{1, 3, 2}},
		{"a request never recorded: the answers keep their place at the end",
			[]wire.Record{ans(1, 9, wire.KindResponse), open(2, 1)}, []int64{2, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []int64
			for _, r := range inExchangeOrder(tc.in) {
				got = append(got, r.N)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLedgerFromWireReadsAResultRecordedBeforeItsResume(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(1).post("sA", toolsCall("2", "charge", `{"order_id":"x"}`)).answer(200, "", true).event("3").cut()
	w.at(2).get("sA", "3").answer(200, "", true).event("4", result("2", false))
	// As a loaded observer records it: the answer before the request.
	n := len(w.recs)
	w.recs[n-3], w.recs[n-2], w.recs[n-1] = w.recs[n-2], w.recs[n-1], w.recs[n-3]
	var results []sideeffects.Record
	for _, r := range ledgerFromWire(w.recs, nil, nil, nil).records {
		if r.Kind == sideeffects.KindResultWritten {
			results = append(results, r)
		}
	}
	require.Len(t, results, 1)
	assert.Equal(t, int64(4), results[0].EventID, "the result crossed the edge on the resumed stream, as event 4")
}

func TestACallKilledWithItsReplicaIsNoDuplicateTheWireCanSee(t *testing.T) {
	// Replica 3 is killed 30 s into the charge on sA: the charge dies
	// before it charges. The naive client charges again on sB, elsewhere.
	r := newRun().fault("crash", "server-3", 30, 90)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(30.1).broke("c1", "pay-1", "sA", "2", "eof")
	r.at(30.2).opened("sB", "c1").sessionNew("c1", "sB")
	r.at(30.3).invoke("c1", "pay-1", "charge", "sB", "2", 2).started("sB", "c1", "2", "charge", "pay-1")
	r.at(120.3).charged("sB", "c1", "2", "pay-1").written("sB", "2", 2)
	r.at(120.4).outcome(history.KindOK, "c1", "pay-1", "sB", "2", 2)
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false))
	w.at(0.1).post("sA", toolsCall("2", "charge", `{"order_id":"pay-1"}`)).answer(200, "", true).event("3").cut()
	w.at(30.2).post("", initialize("c1")).answer(200, "sB", true).event("1", result("1", false))
	w.at(30.3).post("sB", toolsCall("2", "charge", `{"order_id":"pay-1"}`)).answer(200, "", true).event("2", result("2", false))
	r.in.Wire = w.recs
	v := Judge(r.in)
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, Held, dup.Status, "the ledger saw one charge")
	assert.Contains(t, dup.Unseen, "the wire alone cannot tell")
	assert.Contains(t, dup.Unseen, "order pay-1: the server process was killed while request 2 ran")
	ok, reasons := Expectation{Verdict: v.Verdict}.Match(v)
	assert.True(t, ok, reasons)

	// Without a kill the same difference is a real disagreement.
	r.in.Faults[0].Kind, r.in.Faults[0].Target = "partition", "proxy"
	dup, _ = Judge(r.in).Result(NoDuplicateSideEffects)
	assert.Empty(t, dup.Unseen)
	assert.NotEmpty(t, dup.Disagreement)
}

// postModern opens a connection carrying one 2026-07-28 POST of msg.
func (w *wireLog) postModern(msg wire.Message) *wireLog {
	w.conn++
	return w.add(wire.Record{Kind: wire.KindRequest, Conn: w.conn, Exchange: 1, Method: "POST", Path: "/mcp",
		Header: &wire.Header{ProtocolVersion: "2026-07-28", MCPMethod: msg.Method, MCPName: msg.Tool}, Messages: []wire.Message{msg}})
}

// TestLedgerFromWireAt20260728: a call whose stream closes without its
// result was cancelled (no result is derived for it), a task handle is no
// result, and an idempotency_key argument makes the operation safe to
// repeat.
func TestLedgerFromWireAt20260728(t *testing.T) {
	w := &wireLog{}
	w.at(0).postModern(toolsCall("c1-2", "charge", `{"order_id":"pay-1","amount_cents":4999,"idempotency_key":"k"}`)).answer(200, "", true)
	w.at(30).cut()
	w.at(31).postModern(toolsCall("c1-3", "charge", `{"order_id":"pay-2","amount_cents":4999}`)).answer(200, "", false,
		wire.Message{ID: "c1-3", Response: true, ResultType: "task"})
	led := ledgerFromWire(w.recs, nil, nil, nil).records
	var written, started []string
	keys := map[string]string{}
	for _, r := range led {
		switch r.Kind {
		case sideeffects.KindResultWritten:
			written = append(written, r.RequestID)
		case sideeffects.KindCallStarted:
			started = append(started, r.RequestID)
			keys[r.RequestID] = r.IdempotencyKey
		}
	}
	assert.Empty(t, written, "no result: one call was cancelled, the other became a task")
	assert.Equal(t, []string{"c1-2", "c1-3"}, started)
	assert.Equal(t, map[string]string{"c1-2": "k", "c1-3": ""}, keys)
}

// TestLedgerFromWireReadsTasks: a CreateTaskResult (2025-11-25) or a
// resultType task (2026-07-28) answering a tools/call is no result; the
// call's call_started names the task; each tasks/result answered with a
// result, and each extension tasks/get answered completed, is a hand-out
// of the call's result on stream task:<id>; a 2025-11-25 tasks/get, an
// error and a task still working hand nothing out; and no result is
// derived at the end for a task nobody fetched.
func TestLedgerFromWireReadsTasks(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "s1", false, wire.Message{ID: "1", Response: true, Protocol: "2025-11-25"})
	w.at(1).post("s1", toolsCall("2", "charge", `{"order_id":"pay-1","amount_cents":1}`)).answer(200, "", true)
	w.event("1", wire.Message{ID: "2", Response: true, TaskID: "t1", TaskStatus: "working"})
	w.at(2).post("s1", wire.Message{ID: "3", Method: "tasks/get", TaskID: "t1"}).
		answer(200, "", false, wire.Message{ID: "3", Response: true, TaskID: "t1", TaskStatus: "completed"})
	w.at(3).post("s1", wire.Message{ID: "4", Method: "tasks/result", TaskID: "t1"}).
		answer(200, "", false, wire.Message{ID: "4", Response: true, TaskID: "t1"})
	w.at(4).post("s1", toolsCall("5", "charge", `{"order_id":"pay-2","amount_cents":1}`)).
		answer(200, "", false, wire.Message{ID: "5", Response: true, TaskID: "t2", TaskStatus: "working"})
	w.at(5).post("s1", wire.Message{ID: "6", Method: "tasks/result", TaskID: "t2"}).
		answer(200, "", false, wire.Message{ID: "6", Response: true, IsError: true, ErrorCode: -32602, ErrorMessage: "Failed to retrieve task: task not found"})
	w.at(6).postModern(toolsCall("c1-7", "charge", `{"order_id":"pay-3","amount_cents":1}`)).
		answer(200, "", false, wire.Message{ID: "c1-7", Response: true, ResultType: "task", TaskID: "t3", TaskStatus: "working"})
	w.at(7).postModern(wire.Message{ID: "c1-8", Method: "tasks/get", TaskID: "t3"}).
		answer(200, "", false, wire.Message{ID: "c1-8", Response: true, ResultType: "complete", TaskID: "t3", TaskStatus: "working"})
	w.at(8).postModern(wire.Message{ID: "c1-9", Method: "tasks/get", TaskID: "t3"}).
		answer(200, "", false, wire.Message{ID: "c1-9", Response: true, ResultType: "complete", TaskID: "t3", TaskStatus: "completed"})

	led := ledgerFromWire(w.recs, nil, nil, nil).records
	written := map[string]string{}
	started := map[string]string{}
	for _, r := range led {
		switch r.Kind {
		case sideeffects.KindResultWritten:
			written[r.RequestID] = r.Stream
		case sideeffects.KindCallStarted:
			started[r.RequestID] = r.Stream
		}
	}
	assert.Equal(t, map[string]string{"2": "task:t1", "5": "task:t2", "c1-7": "task:t3"}, started)
	assert.Equal(t, map[string]string{"2": "task:t1", "c1-7": "task:t3"}, written, "one hand-out each of t1 and t3, none of the lost t2")
	acc := Account(led, nil, nil)
	assert.Equal(t, map[string]int{"task:t1": 1, "task:t2": 0, "task:t3": 1}, acc.TaskFetches)
}

// modernReissue is a 2026-07-28 charge cut at 30 s that the naive client
// issues again: on the server the first call is either cancelled before
// it charges (the reference server, on_cancel: stop) or charges anyway
// (the go-sdk server).
func modernReissue(cancelled bool) Input {
	r := newRun().fault("reset", "proxy", 30, 30)
	r.at(0).clientStart("c1", "fresh")
	r.at(0.1).invoke("c1", "pay-1", "charge", "", "c1-2", 1).started("", "c1", "c1-2", "charge", "pay-1")
	r.at(30).broke("c1", "pay-1", "", "c1-2", "reset")
	if cancelled {
		r.cancelledCall("c1", "c1-2", "pay-1")
	} else {
		r.at(90).charged("", "c1", "c1-2", "pay-1")
	}
	r.at(31).invoke("c1", "pay-1", "charge", "", "c1-3", 2).started("", "c1", "c1-3", "charge", "pay-1")
	r.at(121).charged("", "c1", "c1-3", "pay-1").written("", "c1-3", 0).outcome(history.KindOK, "c1", "pay-1", "", "c1-3", 0)
	w := &wireLog{}
	w.at(0.1).postModern(toolsCall("c1-2", "charge", `{"order_id":"pay-1"}`)).answer(200, "", true)
	w.at(30).cut()
	w.at(31).postModern(toolsCall("c1-3", "charge", `{"order_id":"pay-1"}`)).answer(200, "", false, result("c1-3", false))
	r.in.Wire = w.recs
	return r.in
}

// TestWhatTheWireCannotSeeOfAModernReissue: the wire counts every accepted
// call charged; the ledger's call_cancelled explains the difference, which
// is then no disagreement.
func TestWhatTheWireCannotSeeOfAModernReissue(t *testing.T) {
	v := Judge(modernReissue(true))
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, Held, dup.Status, "the ledger saw one charge: the first call stopped when cancelled")
	assert.Empty(t, dup.Disagreement)
	assert.Contains(t, dup.Unseen, "the wire alone cannot tell")
	assert.Contains(t, dup.Unseen, "which at 2026-07-28 cancels the call")

	v = Judge(modernReissue(false))
	dup, _ = v.Result(NoDuplicateSideEffects)
	assert.Equal(t, Violated, dup.Status)
	assert.Empty(t, dup.Disagreement, "both accounts see the duplicate")
}

// TestUnseenDrops: a result the server dropped is unread by the ledger's
// account and invisible to the wire's; a result written and never read is
// one the wire must see too.
func TestUnseenDrops(t *testing.T) {
	dropped := Orphan{StreamKey: StreamKey{RequestID: "c1-2"}, N: 4, Dropped: true}
	written := Orphan{StreamKey: StreamKey{RequestID: "c1-2"}, N: 4}
	tests := []struct {
		name         string
		ledger, wire []Orphan
		want         string
	}{
		{"dropped, the wire sees nothing", []Orphan{dropped}, nil, "the server dropped 1 result it had nowhere to write (result_dropped)"},
		{"written and never read", []Orphan{written}, nil, ""},
		{"the wire sees an orphan too", []Orphan{dropped}, []Orphan{written}, ""},
		{"surfaced", []Orphan{{Dropped: true, Surfaced: true}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := unseenDrops(Input{}, &Accounts{Orphaned: tc.ledger}, &Accounts{Orphaned: tc.wire})
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Contains(t, got, tc.want)
		})
	}
}

package check

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// Each test here pins down a way a verdict read from the wire could claim
// what did not happen, on programs that were not written to the checker's
// assumptions.

// open records the opening of a new connection on the server edge.
func (w *wireLog) open() *wireLog {
	return w.add(wire.Record{Kind: wire.KindOpen, Conn: w.conn + 1})
}

// A tool's progress numbers are its own business: steps of 10, a fraction,
// a 0 to start. Six events emitted and six received are six, none lost.
func TestProgressNumbersAreNotEventCounts(t *testing.T) {
	for _, tc := range []struct {
		name  string
		steps []float64
		total float64
	}{
		{"steps of ten", []float64{10, 20, 30, 40, 50, 60}, 60},
		{"percentages from zero", []float64{0, 50, 100}, 100},
		{"fractions", []float64{0.25, 0.5, 0.75, 1}, 1},
		{"bytes", []float64{4096, 8192, 16384}, 16384},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &wireLog{}
			w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
			w.at(0.1).post("sA", toolsCall("2", "export", `{}`)).answer(200, "", true)
			r := newRun().fault("reset", "proxy", 0.05, 0.06)
			r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").invoke("c1", "x", "export", "sA", "2", 1)
			for i, p := range tc.steps {
				w.at(0.2+float64(i)/10).event("", progress("2", p, tc.total))
				r.at(0.2+float64(i)/10).event("c1", "x", "sA", "2", 0, int64(p))
			}
			w.at(1).event("", result("2", false))
			r.at(1).outcome(history.KindOK, "c1", "x", "sA", "2", 0)
			r.in.Wire = w.recs
			v := Judge(r.in)
			n := int64(len(tc.steps))
			assert.Equal(t, n, v.Figures.EventsEmitted)
			assert.Equal(t, n, v.Figures.EventsReceived)
			assert.Zero(t, v.Figures.EventsLostSilent)
			loss, _ := v.Result(NoSilentEventLoss)
			assert.Equal(t, Held, loss.Status, loss.Summary)
			assert.Empty(t, v.Provenance["events_emitted"], "a stream carried from its request to its result is seen whole")
		})
	}
}

// A stream cut with no event ids: what crossed is all the wire knows, and
// the figure says it is a lower bound, not the count.
func TestAFigureFromPartialSightSaysItIsALowerBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.1).post("sA", toolsCall("2", "export", `{}`)).answer(200, "", true)
	for i := range 68 {
		w.at(0.2+float64(i)/1000).event("", progress("2", float64(i+1), 500))
	}
	w.at(1).cut()
	r := newRun().fault("reset", "proxy", 1, 1.01)
	r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").invoke("c1", "x", "export", "sA", "2", 1)
	r.at(1).broke("c1", "x", "sA", "2", "reset")
	r.in.Wire = w.recs
	v := Judge(r.in)
	assert.Equal(t, int64(68), v.Figures.EventsEmitted)
	p := v.Provenance["events_emitted"]
	assert.Equal(t, LowerBound, p.Kind)
	assert.Contains(t, p.Why, "stopped being carried")
	ok, why := Bound{Op: "==", Value: 68}.Proven(68, p)
	assert.False(t, ok, "a lower bound proves no exact figure")
	assert.Contains(t, why, "lower bound")
	ok, _ = Bound{Op: ">=", Value: 60}.Proven(68, p)
	assert.True(t, ok, "but it proves at least")
	met, reasons := Expectation{Verdict: v.Verdict, Figures: map[string]Bound{"events_emitted": {Op: "==", Value: 68}}}.Match(v)
	assert.False(t, met)
	assert.Contains(t, reasons[len(reasons)-1], "not proven")
}

// Dense ids carried across a resume prove what the server numbered, not
// what it emitted: mcp-go queues a call's notifications while no stream
// carries it and refuses them once the queue is full, before they get an
// id. A resume that replays every id up to the result is therefore no proof
// that nothing was lost; the server's ledger, where there is one, says.
func TestDenseIdsAcrossAResumeProveNoMoreThanWhatWasNumbered(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.1).post("sA", toolsCall("2", "chatty", `{"events":6}`)).answer(200, "", true)
	w.event("1", progress("2", 1, 6)).event("2", progress("2", 2, 6)).cut()
	w.at(100).get("sA", "2").answer(200, "", true)
	w.event("3", progress("2", 3, 6)).event("4", progress("2", 4, 6)).event("5", result("2", false))
	r := newRun().fault("partition", "proxy", 10, 90)
	r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").invoke("c1", "chat", "chatty", "sA", "2", 1)
	r.event("c1", "chat", "sA", "2", 1, 1).event("c1", "chat", "sA", "2", 2, 2)
	r.at(10).broke("c1", "chat", "sA", "2", "reset")
	r.at(100).reconnect("c1", "chat", "sA", "2", 2, "ok").resume("c1", "chat", "sA", "2", 2)
	r.event("c1", "chat", "sA", "2", 3, 3).event("c1", "chat", "sA", "2", 4, 4).outcome(history.KindOK, "c1", "chat", "sA", "2", 5)
	r.in.Wire = w.recs
	v := Judge(r.in)
	loss, _ := v.Result(NoSilentEventLoss)
	assert.Equal(t, CannotTell, loss.Status, loss.Summary)
	assert.Contains(t, loss.Evidence[0].Text, "ids number only the events the server kept")
	assert.Equal(t, int64(4), v.Figures.EventsEmitted)
	assert.Equal(t, LowerBound, v.Provenance["events_emitted"].Kind)

	// The server's ledger saw the tool emit six: two were never numbered.
	// The ledger's account stands, and the wire does not disagree: it
	// could not tell.
	for seq := int64(1); seq <= 6; seq++ {
		stream := "post"
		if seq > 2 {
			stream = "get"
		}
		r.in.Ledger = append(r.in.Ledger, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: "sA", Client: "c1", RequestID: "2", Tool: "chatty", Stream: stream, Seq: seq})
	}
	v = Judge(r.in)
	loss, _ = v.Result(NoSilentEventLoss)
	assert.Equal(t, Violated, loss.Status, loss.Summary)
	assert.Empty(t, loss.Disagreement)
}

// A reset before the response's first byte breaks the call as surely as
// one after: the fault hit it.
func TestABreakBeforeTheResponseIsABreak(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`))
	w.at(1.5).cut()
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindReset, Target: "proxy", StartUS: 1_400_000, EndUS: 1_410_000}}
	hist, _ := historyFromWire(in.Wire, in.Ops)
	assert.Contains(t, kindsOf(hist), history.KindStreamBreak, "the call's request was cut before any answer")
	v := Judge(in)
	hit, _ := v.Result(FaultHit)
	assert.True(t, hit.Held(), hit.Summary)
	assert.NotEqual(t, Inconclusive, v.Verdict)
}

// A load generator sends the same arguments 58 times: 58 calls, not one
// retried 57 times; whether any was a retry the wire cannot tell, so the
// figure is an upper bound and no duplicate is claimed.
func TestIdenticalRequestsOfAClientOfItsOwnAreCallsOfTheirOwn(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("mcp-client")).answer(200, "sA", false, result("1", false))
	for i := range 58 {
		id := strconv.Itoa(i + 2)
		w.at(1+float64(i)/100).post("sA", toolsCall(id, "greet", `{"name":"foo"}`)).answer(200, "", false, result(id, false))
	}
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 500_000, EndUS: 2_000_000}}
	v := Judge(in)
	assert.Equal(t, int64(58), v.Figures.Calls)
	assert.Equal(t, int64(58), v.Figures.CallsOK)
	assert.Equal(t, UpperBound, v.Provenance["calls"].Kind, v.Provenance["calls"].Why)
	assert.Zero(t, v.Figures.Duplicates, "no duplicate is claimed")
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, CannotTell, dup.Status, dup.Summary)
	assert.Contains(t, dup.Summary, "key:", "it says what the user can add to tell them apart")
}

// Calls that never crossed the client edge (refused at connect during a
// partition) cannot be counted from the wire: the figure says so.
func TestCallsThatNeverCrossedMakeTheCountALowerBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("2", false))
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindPartition, Target: "proxy", Params: map[string]any{"mode": "refuse"}, StartUS: 2_000_000, EndUS: 9_000_000}}
	v := Judge(in)
	assert.Equal(t, int64(1), v.Figures.Calls)
	assert.Equal(t, LowerBound, v.Provenance["calls"].Kind)
	assert.Contains(t, v.Provenance["calls"].Why, "may have refused or cut connections")
}

// A client of the user's own that exits with an error once a fault hit is
// a finding, with its status and last words; one that exits before any
// fault is a workload error.
func TestAClientThatDiedIsReported(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", true)
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindIdleTimeout, Target: "proxy", StartUS: 0, EndUS: 10_000_000}}
	in.ClientExit = &ClientExit{Code: 1, Status: "exit status 1", TUS: 3_000_000, Tail: []string{"panic: connection reset by peer"}}
	v := Judge(in)
	hit, _ := v.Result(FaultHit)
	assert.True(t, hit.Held(), "the fault brought the client down: it hit")
	assert.Contains(t, hit.Evidence[0].Text, ClientExitFile)
	r, _ := v.Result(ClientSurvived)
	assert.Equal(t, Violated, r.Status)
	assert.Contains(t, r.Summary, "exit status 1 at 3.000s, during fault 0")
	assert.Contains(t, texts(r.Evidence), "its output: panic: connection reset by peer")
	assert.Contains(t, v.Violations, ClientSurvived)
	require.NotNil(t, v.ClientExit, "the exit record is part of the verdict")

	in.Faults[0].StartUS, in.Faults[0].EndUS = 5_000_000, 10_000_000
	v = Judge(in)
	assert.Equal(t, WorkloadError, v.Verdict, "a client that exited before any fault says nothing about faults")

	in.ClientExit = &ClientExit{Code: 0, Status: "exit status 0", TUS: 9_000_000}
	r, _ = Judge(in).Result(ClientSurvived)
	assert.Equal(t, Held, r.Status)
}

// Two workers of one program that call themselves by one name each hold a
// session: nothing but the name ties the sessions to one client.
func TestSessionsSharingAClientNameAreNoProvenFork(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("worker")).answer(200, "sA", false, result("1", false))
	w.at(0.1).post("", initialize("worker")).answer(200, "sB", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("2", false))
	w.at(1).post("sB", toolsCall("2", "place_order", `{"order_id":"o2"}`)).answer(200, "", false, result("2", false))
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 500_000, EndUS: 2_000_000}}
	v := Judge(in)
	fork, _ := v.Result(NoSessionFork)
	assert.Equal(t, CannotTell, fork.Status, fork.Summary)
	assert.NotContains(t, v.Violations, NoSessionFork)
	assert.Equal(t, UpperBound, v.Provenance["forks"].Kind)

	// The client's own history proves who held what.
	r := newRun().fault("latency", "proxy", 0.5, 2)
	r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").sessionNew("c2", "sB")
	r.invoke("c1", "o1", "place_order", "sA", "2", 1).invoke("c2", "o2", "place_order", "sB", "2", 1)
	r.at(1.1).outcome(history.KindOK, "c1", "o1", "sA", "2", 0).outcome(history.KindOK, "c2", "o2", "sB", "2", 0)
	r.in.Wire, r.in.Ops = w.recs, in.Ops
	fork, _ = Judge(r.in).Result(NoSessionFork)
	assert.Equal(t, Held, fork.Status, fork.Summary)
}

// A server that was stopped may have taken its sessions with it (kept in
// memory) or not (a durable store): a client that opens a new session
// after the stop forked only if the earlier one outlived it, which the
// wire proves only by a success answered for it after the stop.
func TestASessionAcrossAServerStopIsNoProvenFork(t *testing.T) {
	build := func(aliveAfterStop bool) Input {
		w := &wireLog{}
		w.at(0).open().post("", initialize("c1")).answer(200, "sA", false, result("1", false))
		w.at(0.5).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, result("2", false))
		if aliveAfterStop {
			w.at(2.5).post("sA", toolsCall("3", "place_order", `{"order_id":"o2"}`)).answer(200, "", false, result("3", false))
		}
		w.at(3).open().post("", initialize("c1")).answer(200, "sB", false, result("1", false))
		r := newRun().fault("latency", "proxy", 0.1, 0.2)
		r.in.Faults = append(r.in.Faults, faults.Entry{Index: 1, Kind: faults.KindCrash, Target: "server", StartUS: 2_000_000, EndUS: 2_100_000})
		r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA").invoke("c1", "o1", "place_order", "sA", "2", 1)
		r.at(0.6).outcome(history.KindOK, "c1", "o1", "sA", "2", 0)
		if aliveAfterStop {
			r.at(2.5).invoke("c1", "o2", "place_order", "sA", "3", 1).outcome(history.KindOK, "c1", "o2", "sA", "3", 0)
		}
		r.at(3).sessionNew("c1", "sB")
		r.in.Wire, r.in.Ops = mirrored(w.recs), Ops{{Tool: "place_order", Key: "order_id"}}
		return r.in
	}
	v := Judge(build(false))
	fork, _ := v.Result(NoSessionFork)
	assert.Equal(t, CannotTell, fork.Status, fork.Summary)
	assert.Contains(t, fork.Summary, "after the server was stopped")
	assert.Equal(t, int64(1), v.Figures.Forks)
	assert.Equal(t, UpperBound, v.Provenance["forks"].Kind)

	v = Judge(build(true))
	fork, _ = v.Result(NoSessionFork)
	assert.Equal(t, Violated, fork.Status, "sA answered a call after the stop: it outlived it, and sB forked: %s", fork.Summary)
}

// A request a latency toxic held until after the server was killed reached
// a dead process: nothing ran, nothing was charged.
func TestARequestIntoADeadServerDidNotRun(t *testing.T) {
	w := &wireLog{}
	w.at(0).open().post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.5).open().post("sA", toolsCall("2", "charge", `{"order_id":"o1"}`)).answer(200, "", false, result("2", false))
	w.at(1).open()
	w.at(3).post("sA", toolsCall("3", "charge", `{"order_id":"o2"}`)) // opened before the kill at 2 s, delivered after it
	w.at(3.1).cut()
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{
		{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 900_000, EndUS: 3_000_000},
		{Index: 1, Kind: faults.KindCrash, Target: "server", StartUS: 2_000_000, EndUS: 2_100_000},
	}
	led := ledgerFromWire(in.Wire, nil, in.Faults, nil)
	for _, r := range led.records {
		assert.NotEqual(t, "o2", r.OrderID, "order o2 reached no live process: %+v", r)
	}
	v := Judge(in)
	assert.Equal(t, int64(1), v.Figures.Charges)
	assert.Zero(t, v.Figures.OrphanedResults)

	in.Faults = in.Faults[:1]
	assert.Equal(t, int64(2), Judge(in).Figures.Charges, "a live server received it: it ran")
}

// Six calls of a workload with the same arguments are six operations when
// the issuing client's history names each: charged once each, no
// duplicate.
func TestIdenticalArgumentsOfDistinctCallsAreNoDuplicates(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	r := newRun().fault("latency", "proxy", 0.5, 2)
	r.at(0).clientStart("c1", "fresh").sessionNew("c1", "sA")
	for i := range 6 {
		id, call := strconv.Itoa(i+2), fmt.Sprintf("c1-%d", i+1)
		w.at(1+float64(i)/10).post("sA", toolsCall(id, "place_order", `{"amount_cents":100}`)).answer(200, "", false, result(id, false))
		r.at(1+float64(i)/10).invoke("c1", call, "place_order", "sA", id, 1).outcome(history.KindOK, "c1", call, "sA", id, 0)
	}
	r.in.Wire = w.recs
	v := Judge(r.in)
	assert.Equal(t, int64(6), v.Figures.Charges)
	assert.Zero(t, v.Figures.Duplicates)
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.Equal(t, Held, dup.Status, dup.Summary)
}

// A call the tool answered with an error is no proven side effect, and a
// workload whose every call is refused is a workload error with the
// server's words, whatever faults stood.
func TestErrorsAreNotWork(t *testing.T) {
	isError := func(id string) wire.Message { return wire.Message{ID: id, Response: true, IsError: true} }
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, isError("2"))
	w.at(2).post("sA", toolsCall("3", "place_order", `{"order_id":"o1"}`)).answer(200, "", false, isError("3"))
	in := Input{Wire: mirrored(w.recs), Ops: Ops{{Tool: "place_order", Key: "order_id"}}}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindIdleTimeout, Target: "proxy", StartUS: 0, EndUS: 10_000_000}}
	v := Judge(in)
	assert.Zero(t, v.Figures.Charges, "an error answer proves no charge")
	dup, _ := v.Result(NoDuplicateSideEffects)
	assert.NotEqual(t, Violated, dup.Status, dup.Summary)
	assert.Equal(t, WorkloadError, v.Verdict, "every call refused, none broken: the workload, not the fault")

	w = &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(1).post("sA", toolsCall("2", "plac_order", `{"order_id":"o1"}`)).answer(200, "", false,
		wire.Message{ID: "2", Response: true, IsError: true, ErrorCode: -32602, ErrorMessage: `unknown tool "plac_order"`})
	in.Wire = mirrored(w.recs)
	v = Judge(in)
	assert.Equal(t, WorkloadError, v.Verdict, "a typo in a tool name is a workload error, not a fault that missed")
	ran, _ := v.Result(WorkloadRan)
	assert.Contains(t, ran.Evidence[0].Text, `unknown tool "plac_order"`, "with the server's own message")
	assert.Zero(t, v.Figures.Charges)
}

// wireCites matches the wire records evidence names.
var wireCites = regexp.MustCompile(`wire records? ((?:\d+(?:, )?)+)`)

// Every wire record evidence cites exists, and a fact no record shows is
// said to be derived.
func TestEvidenceCitesOnlyRecordsThatExist(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false)).end()
	w.at(0.1).post("sA", toolsCall("2", "charge", `{"order_id":"o1"}`)).answer(200, "", true).event("3")
	w.event("4", progress("2", 1, 9)).event("5", progress("2", 2, 9)).cut()
	w.at(60.2).post("", initialize("c1")).answer(200, "sB", true).event("1", result("1", false)).end()
	w.at(60.3).post("sB", toolsCall("2", "charge", `{"order_id":"o1"}`)).answer(200, "", true).event("1")
	w.at(90).event("2", result("2", false))
	in := doubleChargeNaive()
	in.Ledger, in.Wire = nil, w.recs
	v := Judge(in)
	exists := map[int64]bool{}
	for _, r := range in.Wire {
		exists[r.N] = true
	}
	cited, derived := 0, 0
	for _, r := range append(v.Assumptions, v.Invariants...) {
		for _, e := range r.Evidence {
			refs := map[int64]bool{}
			for _, c := range e.Refs {
				if c.File != RefWire {
					continue
				}
				assert.True(t, exists[c.N], "evidence %q cites wire record %d, which is not in the %d records", e.Text, c.N, len(in.Wire))
				refs[c.N] = true
				cited++
				if c.Derived {
					derived++
					assert.Contains(t, e.Text, "derived", "a fact derived from a record says so")
				}
			}
			for _, m := range wireCites.FindAllStringSubmatch(e.Text, -1) {
				for _, n := range regexp.MustCompile(`\d+`).FindAllString(m[1], -1) {
					k, _ := strconv.ParseInt(n, 10, 64)
					assert.True(t, refs[k], "the text of %q names wire record %d, which its refs do not", e.Text, k)
				}
			}
		}
	}
	assert.NotZero(t, cited)
	assert.NotZero(t, derived, "the result the cut call wrote into its stream is derived, and said so")
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.NotContains(t, string(b), fmt.Sprintf("wire record %d", len(in.Wire)+1))
}

// The ledger records the checker derives carry what they were derived
// from.
func TestDerivedRecordsSayWhatTheyCameFrom(t *testing.T) {
	wl := ledgerFromWire(doubleChargeWire(), nil, nil, nil)
	n := 0
	for _, r := range wl.records {
		if from := wl.derived[r.ID]; from != "" {
			n++
			assert.Equal(t, sideeffects.KindResultWritten, r.Kind)
			assert.Contains(t, from, "its result never crossed the server edge")
		}
	}
	assert.Equal(t, 1, n, "the cut call's result")
}

// Judging the same records gives the same verdict, byte for byte, however
// the maps it reads them through are ordered.
func TestJudgingIsDeterministic(t *testing.T) {
	w := &wireLog{}
	w.at(0).post("", initialize("c1")).answer(200, "sA", true).event("1", result("1", false)).end()
	for i := range 6 {
		id := strconv.Itoa(i + 2)
		w.at(1+float64(i)/10).post("sA", toolsCall(id, "charge", fmt.Sprintf(`{"order_id":"o%d"}`, i%2))).answer(200, "", true).event(strconv.Itoa(10 + i))
	}
	w.at(3).cut()
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindReset, Target: "proxy", StartUS: 2_900_000, EndUS: 2_910_000}}
	first, err := json.Marshal(Judge(in))
	require.NoError(t, err)
	for range 30 {
		again, err := json.Marshal(Judge(in))
		require.NoError(t, err)
		require.Equal(t, string(first), string(again))
	}
}

// An initialize that reached the server and whose answer never crossed
// back (its client gave up, the connection closed) may have opened a
// session the wire never saw: the count of sessions is a lower bound.
func TestAnUnansweredInitializeMakesSessionsALowerBound(t *testing.T) {
	w := &wireLog{}
	w.at(0).open().post("", initialize("c1")).answer(200, "sA", false, result("1", false))
	w.at(0.5).post("sA", toolsCall("2", "cityTime", `{"city":"nyc"}`)).answer(200, "", false, result("2", false))
	in := Input{Wire: mirrored(w.recs)}
	in.Faults = []faults.Entry{{Index: 0, Kind: faults.KindLatency, Target: "proxy", StartUS: 400_000, EndUS: 600_000}}
	v := Judge(in)
	assert.Equal(t, int64(1), v.Figures.Sessions)
	assert.Empty(t, v.Provenance["sessions"], "every initialize was answered: the count is observed")

	w.at(1).open().post("", initialize("c2"))
	w.at(1.2).cut()
	in.Wire = mirrored(w.recs)
	v = Judge(in)
	assert.Equal(t, int64(1), v.Figures.Sessions)
	p := v.Provenance["sessions"]
	assert.Equal(t, LowerBound, p.Kind)
	assert.Contains(t, p.Why, "1 initialize request reached the server")
}

package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

func TestJudgeScenarios(t *testing.T) {
	tests := []struct {
		name       string
		input      Input
		verdict    string
		violations []string
		figures    map[string]int64
	}{
		{"naive client double-charges", doubleChargeNaive(), Fail,
			[]string{NoDuplicateSideEffects, NoSessionFork, NoOrphanedResults, OutcomesResolved},
			map[string]int64{"charges": 2, "duplicates": 1, "sessions": 2, "forks": 1, "orphaned_results": 1, "calls_ok": 1, "blind_retries": 1, "worst_reconnect_ms": 100}},
		{"resumable client charges once", doubleChargeResumable(), Pass, nil,
			map[string]int64{"charges": 1, "duplicates": 0, "sessions": 1, "reconnects": 1, "resumes": 1, "worst_reconnect_ms": 1000}},
		{"silent_head loses events silently", evictedResume(true), Fail, []string{NoSilentEventLoss},
			map[string]int64{"events_emitted": 50, "events_received": 10, "events_lost_silent": 40, "events_lost_surfaced": 0, "worst_reconnect_ms": 240500}},
		{"gone surfaces the loss", evictedResume(false), Pass, nil,
			map[string]int64{"events_emitted": 50, "events_received": 10, "events_lost_silent": 0, "events_lost_surfaced": 40, "gaps": 1}},
		{"keepalive: the fault never bit", keepaliveMissed(), Inconclusive, nil,
			map[string]int64{"charges": 1, "calls_ok": 1}},
		{"expired session: unknown outcome, no retry", sessionExpiredUnknown(), Pass, nil,
			map[string]int64{"calls_unknown": 1, "charges": 1, "sessions": 2, "forks": 0, "orphaned_results": 0}},
		{"crashed client with a memory cursor forks", clientCrashMemoryCursor(), Fail,
			[]string{NoSessionFork, NoOrphanedResults},
			map[string]int64{"forks": 1, "events_emitted": 10, "events_received": 8, "events_unread": 2, "events_lost_silent": 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.input)
			assert.Equal(t, tc.verdict, v.Verdict)
			assert.Equal(t, append([]string{}, tc.violations...), v.Violations)
			for name, want := range tc.figures {
				got, ok := v.Figures.Value(name)
				require.True(t, ok, name)
				assert.Equal(t, want, got, name)
			}
		})
	}
}

// invariantCase is a hand-built input and the status one invariant must
// take on it, with a fragment its evidence or summary must contain.
type invariantCase struct {
	name   string
	input  func() Input
	held   bool
	proves string
}

// hit returns a run in which a reset hits call "a" of client c1, ready for
// more records.
func hit() *run {
	r := newRun().fault("reset", "proxy", 1, 2)
	r.at(0).opened("s1", "c1").sessionNew("c1", "s1").invoke("c1", "a", "charge", "s1", "1", 1)
	r.at(1.5).broke("c1", "a", "s1", "1", "reset")
	return r
}

func TestInvariants(t *testing.T) {
	tests := map[string][]invariantCase{
		NoDuplicateSideEffects: {
			{"one charge per order", func() Input {
				return hit().at(3).charged("s1", "c1", "1", "a").charged("s1", "c1", "2", "b").outcome(history.KindOK, "c1", "a", "s1", "1", 0).in
			}, true, "2 charges,"},
			{"an order charged twice", func() Input {
				return hit().at(3).charged("s1", "c1", "1", "a").charged("s1", "c1", "2", "a").outcome(history.KindOK, "c1", "a", "s1", "1", 0).in
			}, false, "ledger n=2, n=3: order a charged 2 times"},
		},
		NoSilentEventLoss: {
			{"every event received", func() Input {
				return hit().at(3).emitted("s1", "1", 1, 1).event("c1", "a", "s1", "1", 1, 1).outcome(history.KindOK, "c1", "a", "s1", "1", 0).in
			}, true, "1 received"},
			{"lost inside a surfaced gap", func() Input {
				return hit().at(3).emitted("s1", "1", 1, 1).emitted("s1", "1", 2, 2).gap("c1", "a", "s1", "1", 0, 1).event("c1", "a", "s1", "1", 2, 2).in
			}, true, "history line 4: 1 event of request 1 in session s1 lost inside"},
			{"missing before a later event", func() Input {
				return hit().at(3).emitted("s1", "1", 1, 1).emitted("s1", "1", 2, 2).event("c1", "a", "s1", "1", 2, 2).in
			}, false, "ledger n=2: 1 of 2 events of request 1 in session s1 lost silently (seq 1..1); the client received past them at history line 4"},
			{"missing after the client's last look", func() Input {
				return hit().at(3).emitted("s1", "1", 1, 1).emitted("s1", "1", 2, 2).event("c1", "a", "s1", "1", 1, 1).in
			}, true, "1 unread"},
		},
		NoSessionFork: {
			{"a new session after the old one closed", func() Input {
				return hit().at(2).closed("s1", "deleted").opened("s2", "c1").sessionNew("c1", "s2").in
			}, true, "2 sessions for 1 client;"},
			{"a new session while the old one is live", func() Input {
				return hit().at(2).opened("s2", "c1").sessionNew("c1", "s2").in
			}, false, "ledger n=1, n=2: c1 opened session s2 at 2.000s while session s1 (opened at 0.000s) was live"},
		},
		NoOrphanedResults: {
			{"the result is read", func() Input {
				return hit().at(3).written("s1", "1", 9).outcome(history.KindOK, "c1", "a", "s1", "1", 9).in
			}, true, "1 result written, every one read"},
			{"a dropped result nobody surfaced is an orphan", func() Input {
				return hit().at(3).led(sideeffects.Record{Kind: sideeffects.KindResultDropped, Session: "s1", RequestID: "1"}).in
			}, false, "ledger n=2: result of request 1 in session s1 dropped by the server (its session was gone), never delivered"},
			{"a dropped result surfaced as unknown is not", func() Input {
				return hit().at(3).led(sideeffects.Record{Kind: sideeffects.KindResultDropped, Session: "s1", RequestID: "1"}).
					outcome(history.KindUnknown, "c1", "a", "s1", "1", 0).in
			}, true, "1 result (0 written, 1 dropped by the server); 1 unread by calls their clients surfaced as unknown outcomes"},
			{"the result lands where nobody listens", func() Input {
				return hit().at(3).written("s1", "1", 9).in
			}, false, "ledger n=2: result of request 1 in session s1 (event id 9) written, never read"},
		},
		OutcomesResolved: {
			{"ok", func() Input { return hit().at(3).outcome(history.KindOK, "c1", "a", "s1", "1", 0).in }, true, "1 ok"},
			{"unknown is a resolution", func() Input { return hit().at(3).outcome(history.KindUnknown, "c1", "a", "s1", "1", 0).in }, true, "1 unknown"},
			{"never resolved", func() Input { return hit().in }, false, "history line 2: call a of c1 (order a) invoked, never resolved"},
			{"blind retry after unknown", func() Input {
				return hit().at(3).outcome(history.KindUnknown, "c1", "a", "s1", "1", 0).invoke("c1", "a", "charge", "s1", "2", 2).
					outcome(history.KindOK, "c1", "a", "s1", "2", 0).in
			}, false, "history lines 4, 5: c1 invoked non-idempotent order a again after its unknown outcome"},
			{"blind retry of an attempt that reached the server", func() Input {
				return hit().at(2).started("s1", "c1", "1", "charge", "a").at(3).invoke("c1", "a", "charge", "s2", "2", 2).
					outcome(history.KindOK, "c1", "a", "s2", "2", 0).in
			}, false, "history lines 2, 4, ledger n=2: c1 invoked non-idempotent order a again, although the earlier attempt had reached the server and its outcome was never read"},
			{"a retry of an attempt that never reached the server is not blind", func() Input {
				return hit().at(3).invoke("c1", "a", "charge", "s2", "2", 2).outcome(history.KindOK, "c1", "a", "s2", "2", 0).in
			}, true, "no blind retry"},
			{"a retry after the failure was read is not blind", func() Input {
				return hit().at(2).started("s1", "c1", "1", "charge", "a").
					hist(history.Record{Kind: history.KindFail, Call: "a", OrderID: "a", Session: "s1", RequestID: "1", Result: history.ResultRead}).
					at(3).invoke("c1", "a", "charge", "s2", "2", 2).outcome(history.KindOK, "c1", "a", "s2", "2", 0).in
			}, true, "no blind retry"},
			{"a failure reported for a committed charge", func() Input {
				return hit().at(2).started("s1", "c1", "1", "charge", "a").charged("s1", "c1", "1", "a").
					hist(history.Record{Kind: history.KindFail, Call: "a", OrderID: "a", Session: "s1", RequestID: "1", Reason: "retries_exhausted"}).in
			}, false, "history line 4, ledger n=3: c1 reported call a (order a) failed, but its side effect was committed"},
		},
	}
	for id, cases := range tests {
		for _, tc := range cases {
			t.Run(id+"/"+tc.name, func(t *testing.T) {
				v := Judge(tc.input())
				r, ok := v.Result(id)
				require.True(t, ok)
				assert.Equal(t, tc.held, r.Held(), r.Summary)
				text := r.Summary
				for _, e := range r.Evidence {
					text += "\n" + e.Text
				}
				assert.Contains(t, text, tc.proves)
				hit, _ := v.Result(FaultHit)
				require.True(t, hit.Held(), "every case is built with a fault that hits")
				want := Pass
				if !tc.held {
					want = Fail
					assert.Contains(t, v.Violations, id)
				}
				if tc.held && len(v.Violations) > 0 {
					want = Fail
				}
				assert.Equal(t, want, v.Verdict)
			})
		}
	}
}

func TestFaultHit(t *testing.T) {
	// call "a" of c1 runs from 1s to 5s; the ledger shows a duplicate charge,
	// which an inconclusive verdict must still report.
	call := func() *run {
		r := newRun()
		r.at(0).opened("s1", "c1").sessionNew("c1", "s1")
		r.at(1).invoke("c1", "a", "charge", "s1", "1", 1)
		r.at(4).charged("s1", "c1", "1", "a").charged("s1", "c1", "1", "a")
		return r
	}
	end := func(r *run) Input { return r.at(5).outcome(history.KindOK, "c1", "a", "s1", "1", 0).in }
	tests := []struct {
		name    string
		input   Input
		held    bool
		summary string
		proves  string
	}{
		{"a reset breaks the stream", end(call().fault("reset", "proxy", 2, 3).at(2.5).broke("c1", "a", "s1", "1", "reset")),
			true, "1 of 1 faults hit", "history line 3 stream_break reset at 2.500s"},
		{"a crash restarts the client", end(call().fault("crash", "client", 2, 3).at(3).clientStart("c1", "restarted: resumed 1 calls")),
			true, "1 of 1 faults hit", "client_start restarted: resumed 1 calls"},
		{"still active at the end of the run", end(call().fault("partition", "proxy", 2, 0).at(2.5).broke("c1", "a", "s1", "1", "timeout")),
			true, "1 of 1", "[2.000s, end of run]"},
		{"a call never resolved is in flight to the end", call().fault("reset", "proxy", 7, 8).at(7.5).broke("c1", "a", "s1", "1", "reset").in,
			true, "1 of 1", "hit call a"},
		{"the fault came after every call", end(call().fault("reset", "proxy", 6, 7).at(6.5).broke("c1", "a", "s1", "1", "reset")),
			false, "no fault window overlapped a call in flight", "overlapped no call in flight"},
		{"the fault overlapped but nothing broke", end(call().fault("idle_timeout", "proxy", 0, 9)),
			false, "did not bite", "overlapped 1 call in flight (first: call a of c1, history line 2)"},
		{"the break came before the fault", end(call().at(1.5).broke("c1", "a", "s1", "1", "eof").fault("reset", "proxy", 2, 3)),
			false, "did not bite", "no client's stream broke"},
		{"another client's stream broke", end(call().fault("reset", "proxy", 2, 3).at(2.5).broke("c2", "b", "s2", "1", "reset")),
			false, "did not bite", ""},
		{"a crashed client that cannot know it ran before", end(call().at(0).clientStart("c1", "fresh").fault("crash", "client", 2, 3).at(3).clientStart("c1", "fresh")),
			true, "1 of 1 faults hit", "history line 4 client_start fresh at 3.000s"},
		{"a first start is not a restart", end(call().fault("restart", "client", 2, 3).at(3).clientStart("c1", "fresh")),
			false, "did not bite", ""},
		{"a repeated fault is named with its repeat", func() Input {
			in := end(call().fault("reset", "proxy", 2, 3).at(2.5).broke("c1", "a", "s1", "1", "reset"))
			in.Faults[0].Index, in.Faults[0].Repeat = 2, 4
			return in
		}(), true, "1 of 1", "fault 2 repeat 4 (reset on proxy, [2.000s, 3.000s]) hit call a"},
		{"the injection failed", func() Input {
			in := end(call().fault("reset", "proxy", 2, 3).at(2.5).broke("c1", "a", "s1", "1", "reset"))
			in.Faults[0].Error = "toxiproxy: connection refused"
			return in
		}(), false, "no fault was injected without error", "the injection failed: toxiproxy: connection refused"},
		{"no faults at all", end(call()), false, "no fault was injected", ""},
		{"a break long after the fault's window is the client's own", call().fault("latency", "proxy", 1.5, 1.6).
			at(45).broke("c1", "a", "s1", "1", "timeout").at(60).outcome(history.KindOK, "c1", "a", "s1", "1", 0).in,
			false, "did not bite", "overlapped 1 call in flight"},
		{"a break soon after a one-shot fault is its doing", call().fault("reset", "proxy", 1.5, 1.6).
			at(5.5).broke("c1", "a", "s1", "1", "eof").at(60).outcome(history.KindOK, "c1", "a", "s1", "1", 0).in,
			true, "1 of 1", "stream_break eof at 5.500s"},
		{"a fault whose heal failed was still injected", func() Input {
			in := end(call().fault("partition", "proxy", 2, 3).at(2.5).broke("c1", "a", "s1", "1", "reset"))
			in.Faults[0].HealError = "toxiproxy: timeout"
			return in
		}(), true, "1 of 1 faults hit", "hit call a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Judge(tc.input)
			a, _ := v.Result(FaultHit)
			assert.Equal(t, FaultHit, a.ID)
			assert.Equal(t, tc.held, a.Held())
			assert.Contains(t, a.Summary, tc.summary)
			assert.Contains(t, strings.Join(texts(a.Evidence), "\n"), tc.proves)
			assert.Contains(t, v.Violations, NoDuplicateSideEffects, "invariants are judged either way")
			if tc.held {
				assert.Equal(t, Fail, v.Verdict)
			} else {
				assert.Equal(t, Inconclusive, v.Verdict, "a fault that missed never passes, nor fails")
			}
		})
	}
}

func TestEvidenceIsBounded(t *testing.T) {
	r := hit()
	for i := range 25 {
		order := fmt.Sprint("o-", i)
		r.at(3).charged("s1", "c1", "1", order).charged("s1", "c1", "1", order)
	}
	for range 7 {
		r.charged("s1", "c1", "1", "o-0")
	}
	res, _ := Judge(r.in).Result(NoDuplicateSideEffects)
	assert.Len(t, res.Evidence, MaxEvidence)
	assert.Equal(t, 15, res.Omitted)
	assert.Equal(t, "ledger n=2, n=3, n=52, n=53, n=54 (+4 more): order o-0 charged 9 times", res.Evidence[0].Text)
}

func TestFigureNamesMatchJSON(t *testing.T) {
	var f Figures
	rv := reflect.ValueOf(&f).Elem()
	for i := range rv.NumField() {
		rv.Field(i).SetInt(int64(i + 1)) // distinct values expose a crossed accessor
	}
	b, err := json.Marshal(f)
	require.NoError(t, err)
	dec := json.NewDecoder(bytes.NewReader(b))
	_, err = dec.Token()
	require.NoError(t, err)
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		require.NoError(t, err)
		var v int64
		require.NoError(t, dec.Decode(&v))
		keys = append(keys, k.(string))
		got, ok := f.Value(k.(string))
		assert.True(t, ok, k)
		assert.Equal(t, v, got, k)
	}
	assert.Equal(t, FigureNames, keys, "FigureNames lists the JSON keys in order")
	_, ok := f.Value("nope")
	assert.False(t, ok)
}

func TestAWorkloadTheServerRefusesIsAWorkloadError(t *testing.T) {
	refused := func(faultAt float64) Input {
		r := newRun().fault("idle_timeout", "proxy", faultAt, faultAt+60)
		r.at(0).clientStart("c1", "fresh").opened("s1", "c1").sessionNew("c1", "s1").invoke("c1", "a", "hello", "s1", "2", 1)
		r.at(0.1).hist(history.Record{Kind: history.KindFail, Call: "a", OrderID: "a", Session: "s1", RequestID: "2",
			Result: history.ResultRead, Reason: `jsonrpc error -32602: unknown tool "hello"`})
		return r.in
	}
	v := Judge(refused(5))
	assert.Equal(t, WorkloadError, v.Verdict)
	ran, _ := v.Result(WorkloadRan)
	assert.False(t, ran.Held())
	assert.Equal(t, []string{`history line 4: call a of c1 failed: jsonrpc error -32602: unknown tool "hello"`}, texts(ran.Evidence),
		"the server's own words")
	ok, reasons := Expectation{Verdict: Inconclusive}.Match(v)
	assert.False(t, ok, "no experiment expects a workload error")
	assert.Contains(t, reasons[0], "verdict is workload_error")

	v = Judge(refused(0))
	assert.Equal(t, WorkloadError, v.Verdict, "an idle timeout standing from the start does not answer for the server: a typo in a tool name is no fault's doing")

	in := refused(0)
	in.Faults[0].Kind = "http_status"
	ran, _ = Judge(in).Result(WorkloadRan)
	assert.True(t, ran.Held(), "a call failing while the proxy answers for the server may be the fault's doing")

	in = refused(0)
	in.History = append(in.History[:3:3], history.Record{TUS: 50_000, Client: "c1", Kind: history.KindStreamBreak, Call: "a", Session: "s1", RequestID: "2", Reason: "reset"}, in.History[3])
	ran, _ = Judge(in).Result(WorkloadRan)
	assert.True(t, ran.Held(), "a call whose stream broke before it failed failed under the fault")
}

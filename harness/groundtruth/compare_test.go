package groundtruth

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVerdictReadsEitherShape(t *testing.T) {
	v, err := ParseVerdict([]byte(`{"verdict": "fail", "violations": ["no_session_fork"],
		"assumptions": [{"id": "fault_hit", "status": "held", "summary": "hit"}],
		"invariants": [{"id": "no_session_fork", "status": "violated", "evidence": ["wire records 3, 4: fork"]},
		               {"id": "no_silent_event_loss", "status": "cannot tell"}],
		"figures": {"calls": 3, "events_emitted": {"value": 68, "kind": "lower bound"}, "events_lost_silent": {"basis": "cannot_tell"}},
		"client": {"exit": {"code": 1, "status": "exit status 1"}}}`))
	require.NoError(t, err)
	assert.Equal(t, "fail", v.Verdict)
	assert.Equal(t, StatusCannotTell, v.Results["no_silent_event_loss"].Status)
	assert.Equal(t, Figure{Value: 3}, v.Figures["calls"])
	assert.Equal(t, Figure{Value: 68, Kind: FigureLowerBound}, v.Figures["events_emitted"])
	assert.Equal(t, FigureCannotTell, v.Figures["events_lost_silent"].Kind)
	require.NotNil(t, v.ClientExit)
	assert.Equal(t, 1, *v.ClientExit)

	apart, err := ParseVerdict([]byte(`{"verdict": "fail", "figures": {"calls": 1, "events_emitted": 5, "sessions": 2},
		"provenance": {"calls": {"kind": "lower_bound", "why": "identical requests"}, "events_emitted": {"kind": "upper_bound"}},
		"client_exit": {"code": 3, "status": "exit status 3", "t_us": 1200}}`))
	require.NoError(t, err)
	assert.Equal(t, Figure{Value: 1, Kind: FigureLowerBound}, apart.Figures["calls"])
	assert.Equal(t, Figure{Value: 5, Kind: FigureUpperBound}, apart.Figures["events_emitted"])
	assert.Equal(t, Figure{Value: 2}, apart.Figures["sessions"])
	require.NotNil(t, apart.ClientExit)
	assert.Equal(t, 3, *apart.ClientExit)

	flat, err := ParseVerdict([]byte(`{"verdict": "pass", "figures": {"wall_ms": 3}, "client_exit_code": 2}`))
	require.NoError(t, err)
	require.NotNil(t, flat.ClientExit)
	assert.Equal(t, 2, *flat.ClientExit)
	none, err := ParseVerdict([]byte(`{"verdict": "pass", "figures": {"wall_ms": 3}}`))
	require.NoError(t, err)
	assert.Nil(t, none.ClientExit)
}

func TestDanglingEvidence(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wire.jsonl"), []byte("{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte("{}\n{}\n"), 0o644))
	v := Verdict{Results: map[string]Judged{
		"a": {Evidence: []string{"wire records 1, 3: fine", "wire record 4: result written, never read"}},
		"b": {Evidence: []string{"ledger n=2: charge", "history line 3: ok"}},
	}}
	got, err := danglingEvidence(dir, v)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Contains(t, got[0], "wire record 4")
	assert.Contains(t, got[1], "ledger n=2")
	assert.Contains(t, got[2], "history line 3")

	structured, err := ParseVerdict([]byte(`{"verdict": "fail", "invariants": [{"id": "no_orphaned_results", "status": "violated",
		"evidence": [{"text": "result written, never read", "refs": [{"file": "wire", "n": 3}, {"file": "wire", "n": 9, "derived": true}]},
		             {"text": "history line 2: invoke", "refs": [{"file": "history", "n": 2}]}]}], "figures": {}}`))
	require.NoError(t, err)
	got, err = danglingEvidence(dir, structured)
	require.NoError(t, err)
	require.Len(t, got, 1, "the records an evidence line names apart from its text")
	assert.Contains(t, got[0], "wire record 9")
}

// truthOf is a truth with the given figures and invariants, everything else
// not established.
func truthOf(fault Judgement, figures map[string]Range, invariants map[string]Judgement) Truth {
	return Truth{FaultHit: fault, Figures: figures, Invariants: invariants}
}

func TestCompare(t *testing.T) {
	hit := held("client log line 6: EOF")
	tests := []struct {
		name  string
		truth Truth
		v     Verdict
		want  []string // kind: what
	}{
		{"agreeing", truthOf(hit, map[string]Range{"calls": Exactly(3, "")}, map[string]Judgement{NoSessionFork: held("")}),
			verdict("fail", map[string]string{"fault_hit": "held", NoSessionFork: "held"}, map[string]Figure{"calls": {Value: 3}}), nil},
		{"inconclusive over a hit", truthOf(hit, nil, nil),
			verdict("inconclusive", map[string]string{"fault_hit": "violated"}, nil), []string{"false inconclusive: fault_hit"}},
		{"held over a violation", truthOf(hit, nil, map[string]Judgement{NoDuplicateSideEffects: violated("ran twice")}),
			verdict("pass", map[string]string{NoDuplicateSideEffects: "held"}, nil), []string{"false verdict: no_duplicate_side_effects"}},
		{"not judged over a violation", truthOf(hit, nil, map[string]Judgement{NoSilentEventLoss: violated("lost")}),
			verdict("fail", map[string]string{}, nil), []string{"false verdict: no_silent_event_loss"}},
		{"cannot tell is no claim", truthOf(hit, nil, map[string]Judgement{NoOrphanedResults: violated("unread")}),
			verdict("fail", map[string]string{NoOrphanedResults: "cannot_tell"}, nil), nil},
		{"a pass rests on what it held, not on what it cannot tell", truthOf(hit, nil, map[string]Judgement{NoSessionFork: violated("two sessions")}),
			verdict("pass", map[string]string{NoDuplicateSideEffects: "held", NoSessionFork: "cannot_tell"}, nil), nil},
		{"violated over a hold", truthOf(hit, nil, map[string]Judgement{NoSessionFork: held("one session each")}),
			verdict("fail", map[string]string{NoSessionFork: "violated"}, nil), []string{"false verdict: no_session_fork"}},
		{"a pass where no fault hit", truthOf(violated("no call was made"), nil, nil),
			verdict("pass", map[string]string{"fault_hit": "held"}, nil), []string{"false verdict: fault_hit"}},
		{"figures: exact, range, lower bound", truthOf(hit, map[string]Range{
			"calls": Between(33, 36, "lines"), "events_emitted": Exactly(484, "log"), "events_received": Exactly(6, "log"),
			"sessions": Unknown("no log")}, nil),
			verdict("fail", nil, map[string]Figure{"calls": {Value: 1}, "events_emitted": {Value: 68, Kind: FigureLowerBound},
				"events_received": {Value: 60}, "sessions": {Value: 9}}),
			[]string{"false figure: calls", "false figure: events_received"}},
		{"a lower bound above the truth", truthOf(hit, map[string]Range{"events_emitted": Exactly(6, "log")}, nil),
			verdict("fail", nil, map[string]Figure{"events_emitted": {Value: 60, Kind: FigureLowerBound}}), []string{"false figure: events_emitted"}},
		{"an upper bound below the truth", truthOf(hit, map[string]Range{"calls": Between(33, 36, "lines"), "forks": Exactly(0, "")}, nil),
			verdict("fail", nil, map[string]Figure{"calls": {Value: 30, Kind: FigureUpperBound}, "forks": {Value: 2, Kind: FigureUpperBound}}),
			[]string{"false figure: calls"}},
		{"summed figures", truthOf(hit, map[string]Range{FigureCallsNotOK: Exactly(2, "")}, nil),
			verdict("fail", nil, map[string]Figure{"calls_failed": {Value: 1}, "calls_unresolved": {Value: 1}}), nil},
		{"workload error missed", Truth{WorkloadError: held("unknown tool"), FaultHit: hit},
			verdict("inconclusive", nil, nil), []string{"false verdict: verdict", "false inconclusive: fault_hit"}},
		{"workload error found", Truth{WorkloadError: held("unknown tool"), FaultHit: hit, Invariants: map[string]Judgement{NoSessionFork: held("")}},
			verdict("workload_error", nil, nil), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range Compare("run", tc.truth, tc.v) {
				got = append(got, d.Kind+": "+d.What)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestCompareClientExit(t *testing.T) {
	one, zero := 1, 0
	dead := Truth{ClientExit: &one, ClientDied: "Failed to connect"}
	assert.Len(t, Compare("run", dead, Verdict{Verdict: "inconclusive"}), 1, "a client that died, unreported")
	assert.Empty(t, Compare("run", dead, Verdict{Verdict: "inconclusive", ClientExit: &one}))
	assert.Len(t, Compare("run", dead, Verdict{Verdict: "inconclusive", ClientExit: &zero}), 1)
	assert.Empty(t, Compare("run", Truth{ClientExit: &zero}, Verdict{Verdict: "pass"}), "an exit 0 needs no word")
}

func TestDeriveClientExit(t *testing.T) {
	one, zero := 1, 0
	server := ServerRecord{Program: "gosdk-http", ExecutionsKnown: true}
	client := func(exit *int, exitUS, faultUS int64) ClientRecord {
		return ClientRecord{Program: "gosdk-http", CallsMade: Exactly(0, ""), Exit: exit, ExitUS: exitUS, FaultUS: faultUS, Died: "Failed to connect"}
	}
	died := Derive(server, client(&one, 500, 100))
	assert.Equal(t, StatusViolated, died.Invariants[ClientSurvived].Status)
	assert.False(t, died.WorkloadError.Known())
	assert.Equal(t, StatusViolated, died.FaultHit.Status, "it died of the server's answer, not of the fault: no call was hit")
	of503 := client(&one, 500, 100)
	of503.Died = "Failed to connect: sending \"initialize\": Service Unavailable"
	assert.Equal(t, StatusViolated, Derive(server, of503).FaultHit.Status, "it died of the fault before it made a call: no call in flight was hit")
	of503.Calls, of503.CallsMade = []Call{{Key: "nyc", Outcome: OutcomeOK, ResultRead: true, Attempts: 1}}, Between(1, 2, "")
	assert.False(t, Derive(server, of503).FaultHit.Known(), "it died of the fault mid-run: a call may have been in flight")
	early := Derive(server, client(&one, 50, 100))
	assert.Equal(t, StatusHeld, early.WorkloadError.Status, "an exit before any fault: the workload never ran")
	noFault := Derive(server, client(&one, 50, -1))
	assert.Equal(t, StatusHeld, noFault.WorkloadError.Status)
	fine := Derive(server, client(&zero, 500, 100))
	assert.Equal(t, StatusHeld, fine.Invariants[ClientSurvived].Status)
	_, judged := Derive(server, ClientRecord{Program: "naive"}).Invariants[ClientSurvived]
	assert.False(t, judged, "chaosrun's own clients keep no exit record")
}

func verdict(v string, statuses map[string]string, figures map[string]Figure) Verdict {
	out := Verdict{Verdict: v, Results: map[string]Judged{}, Figures: figures}
	for id, s := range statuses {
		out.Results[id] = Judged{Status: s}
	}
	return out
}

func TestDerive(t *testing.T) {
	order := func(key string, committed bool) Execution {
		return Execution{Tool: "place_order", Key: key, Completed: true, Committed: committed}
	}
	tests := []struct {
		name   string
		server ServerRecord
		client ClientRecord
		want   map[string]string // invariant: status ("" not established)
		fault  string
	}{
		{"a blind retry charged twice",
			ServerRecord{Program: "shop-gosdk", ExecutionsKnown: true, KeysShown: true, Resumable: true, Emitted: Exactly(0, ""),
				Executions: []Execution{order("o1", true), order("o1", true)}},
			ClientRecord{Program: "retry-client", CallsMade: Exactly(1, ""), Forks: Exactly(1, ""), Received: Exactly(0, ""), Gapped: Exactly(0, ""),
				Calls: []Call{{Key: "o1", Outcome: OutcomeOK, ResultRead: true, Attempts: 2, Hit: "line 1: EOF"}}},
			map[string]string{NoDuplicateSideEffects: StatusViolated, NoSessionFork: StatusViolated, NoOrphanedResults: StatusViolated,
				OutcomesResolved: StatusViolated, NoSilentEventLoss: StatusHeld}, StatusHeld},
		{"identical calls of a client that never resends",
			ServerRecord{Program: "gosdk-http", ExecutionsKnown: true, Emitted: Exactly(0, "")},
			ClientRecord{Program: "gosdk-loadtest", NeverResends: true, CallsMade: Between(2, 4, ""), Forks: Exactly(0, ""), Abandoned: true,
				Calls: []Call{{Key: "nyc", Outcome: OutcomeOK, ResultRead: true, Attempts: 1}, {Key: "nyc", Outcome: OutcomeOK, ResultRead: true, Attempts: 1}}},
			map[string]string{NoDuplicateSideEffects: StatusHeld, NoSessionFork: StatusHeld, OutcomesResolved: "", NoOrphanedResults: StatusHeld},
			StatusViolated},
		{"identical calls under a declared key are one operation",
			ServerRecord{Program: "reference", ExecutionsKnown: true, KeysShown: true, Resumable: true,
				Executions: []Execution{order("o-9", true), order("o-9", true), order("o-9", false)}},
			ClientRecord{Program: "gosdk-loadtest", NeverResends: true, CallsMade: Exactly(3, ""),
				Calls: []Call{{Key: "o-9", Keyed: true, Outcome: OutcomeOK, ResultRead: true, Attempts: 1},
					{Key: "o-9", Keyed: true, Outcome: OutcomeOK, ResultRead: true, Attempts: 1},
					{Key: "o-9", Keyed: true, Outcome: OutcomeFailed, Attempts: 1, Hit: "EOF"}}},
			map[string]string{NoDuplicateSideEffects: StatusViolated}, StatusHeld},
		{"a failure reported after the charge",
			ServerRecord{Program: "shop-gosdk", ExecutionsKnown: true, KeysShown: true, Resumable: true, Executions: []Execution{order("o1", true)}},
			ClientRecord{Program: "retry-client", CallsMade: Exactly(1, ""), Calls: []Call{{Key: "o1", Outcome: OutcomeFailed, Attempts: 1, Hit: "deadline"}}},
			map[string]string{OutcomesResolved: StatusViolated, NoOrphanedResults: StatusViolated, NoDuplicateSideEffects: StatusHeld}, StatusHeld},
		{"no call at all",
			ServerRecord{Program: "reference", ExecutionsKnown: true},
			ClientRecord{Program: "mcpgo-simple-client", NoCalls: true, CallsMade: Exactly(0, "")},
			map[string]string{NoDuplicateSideEffects: StatusHeld, NoOrphanedResults: StatusHeld}, StatusViolated},
		{"events lost on a stream read to its end",
			ServerRecord{Program: "shop-gosdk", ExecutionsKnown: true, KeysShown: true, Resumable: true, Emitted: Exactly(100, "")},
			ClientRecord{Program: "resumable", CallsMade: Exactly(1, ""), Received: Exactly(60, ""), Gapped: Exactly(0, ""),
				Calls: []Call{{Key: "e", Idempotent: true, Outcome: OutcomeOK, ResultRead: true, Attempts: 1}}},
			map[string]string{NoSilentEventLoss: StatusViolated}, StatusViolated},
		{"events of an abandoned attempt are unread, not lost",
			ServerRecord{Program: "shop-gosdk", ExecutionsKnown: true, KeysShown: true, Resumable: true, Emitted: Exactly(100, "")},
			ClientRecord{Program: "naive", CallsMade: Exactly(1, ""), Received: Exactly(60, ""), Gapped: Exactly(0, ""),
				Calls: []Call{{Key: "e", Idempotent: true, Outcome: OutcomeOK, ResultRead: true, Attempts: 2, Hit: "break"}}},
			map[string]string{NoSilentEventLoss: ""}, StatusHeld},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			truth := Derive(tc.server, tc.client)
			for id, want := range tc.want {
				assert.Equal(t, want, truth.Invariants[id].Status, "%s: %s", id, truth.Invariants[id].Why)
			}
			assert.Equal(t, tc.fault, truth.FaultHit.Status, truth.FaultHit.Why)
		})
	}
}

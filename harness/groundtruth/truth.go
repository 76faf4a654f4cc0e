package groundtruth

import (
	"fmt"
	"strings"
)

// Judgement is what the oracle establishes of an invariant or assumption:
// held, violated, or nothing (Status ""), and why.
type Judgement struct {
	Status string // StatusHeld, StatusViolated or "" (not established)
	Why    string
}

func held(why string, args ...any) Judgement {
	return Judgement{Status: StatusHeld, Why: fmt.Sprintf(why, args...)}
}

func violated(why string, args ...any) Judgement {
	return Judgement{Status: StatusViolated, Why: fmt.Sprintf(why, args...)}
}

func unknown(why string, args ...any) Judgement { return Judgement{Why: fmt.Sprintf(why, args...)} }

// Known reports whether the oracle established the status.
func (j Judgement) Known() bool { return j.Status != "" }

// Figure names the truth has that the verdict does not spell as one
// figure: the calls whose result the client did not read (calls_failed,
// calls_unknown and calls_unresolved together: the wire cannot know which
// of them a client concluded), and the events missing at the client
// (events_lost_silent, events_lost_surfaced and events_unread together).
const (
	FigureCallsNotOK     = "calls_not_ok"
	FigureEventsMissing  = "events_missing"
	AssumptionFaultHit   = "fault_hit"
	VerdictWorkloadError = "workload_error"
)

// Truth is what the programs' own records establish of a run.
type Truth struct {
	FaultHit Judgement
	// WorkloadError is held when the server refused the calls before
	// running any (an unknown tool): the verdict must say workload_error.
	WorkloadError Judgement
	Figures       map[string]Range
	Invariants    map[string]Judgement
	// ClientExit is a bring-your-own client's exit code (nil for
	// chaosrun's own clients), ClientDied its own account of dying.
	ClientExit *int
	ClientDied string
	Limits     []string
}

// Invariant ids, as the verdict names them.
const (
	NoDuplicateSideEffects = "no_duplicate_side_effects"
	NoSilentEventLoss      = "no_silent_event_loss"
	NoSessionFork          = "no_session_fork"
	NoOrphanedResults      = "no_orphaned_results"
	OutcomesResolved       = "outcomes_resolved"
	ClientSurvived         = "client_survived"
)

// Derive joins a server's and a client's records into the truth of a run.
func Derive(s ServerRecord, c ClientRecord) Truth {
	t := Truth{Figures: map[string]Range{}, Invariants: map[string]Judgement{},
		ClientExit: c.Exit, ClientDied: c.Died}
	for _, l := range s.Limits {
		t.Limits = append(t.Limits, s.Program+": "+l)
	}
	for _, l := range c.Limits {
		t.Limits = append(t.Limits, c.Program+": "+l)
	}
	t.FaultHit = faultHit(s, c)
	t.WorkloadError = workloadError(s, c)
	t.Figures["calls"] = c.CallsMade
	ok := int64(0)
	for _, call := range c.Calls {
		if call.Outcome == OutcomeOK {
			ok++
		}
	}
	if c.Abandoned {
		t.Figures["calls_ok"] = Between(ok, ok+c.CallsMade.Hi-int64(len(c.Calls)), "its ok calls, and the calls it gave up when it stopped, whose answers may have come")
	} else {
		t.Figures["calls_ok"] = Exactly(ok, "the calls whose result it read")
	}
	t.Figures[FigureCallsNotOK] = c.CallsMade.Minus(t.Figures["calls_ok"])
	t.Figures["duplicates"] = duplicates(s, c)
	t.Figures["events_emitted"] = s.Emitted
	if c.NoCalls {
		t.Figures["events_emitted"] = Exactly(0, "no call was made")
	}
	t.Figures["events_received"] = c.Received
	t.Figures[FigureEventsMissing] = t.Figures["events_emitted"].Minus(c.Received)
	t.Figures["events_lost_surfaced"] = c.Gapped
	t.Figures["sessions"] = s.Sessions
	t.Figures["forks"] = c.Forks
	t.Figures["orphaned_results"] = orphaned(s, c)
	t.Invariants[NoDuplicateSideEffects] = fromCount(t.Figures["duplicates"], "duplicate executions")
	t.Invariants[NoSessionFork] = fromCount(t.Figures["forks"], "forks")
	t.Invariants[NoOrphanedResults] = fromCount(t.Figures["orphaned_results"], "orphaned results")
	t.Invariants[NoSilentEventLoss] = silentLoss(t.Figures[FigureEventsMissing], c)
	t.Invariants[OutcomesResolved] = outcomes(s, c)
	if c.Exit != nil {
		t.Invariants[ClientSurvived] = survived(c)
		if *c.Exit != 0 && !c.Stopped && (c.FaultUS < 0 || c.ExitUS < c.FaultUS) {
			t.WorkloadError = held("the client exited %d before any fault was injected: %s", *c.Exit, c.Died)
		}
	}
	return t
}

// survived judges client_survived: a client of the user's own that exited
// 0 survived; one that exited with an error once a fault was injected did
// not, whatever made it (the invariant asks how it ended, not why).
func survived(c ClientRecord) Judgement {
	switch {
	case c.Stopped:
		return unknown("the harness stopped it at the run's end")
	case *c.Exit == 0:
		return held("it exited 0")
	case c.FaultUS >= 0 && c.ExitUS >= c.FaultUS:
		return violated("it exited %d at %.3fs, after the first fault (%.3fs): %s", *c.Exit, float64(c.ExitUS)/1e6, float64(c.FaultUS)/1e6, c.Died)
	}
	return unknown("it exited %d before any fault", *c.Exit)
}

// faultHit is held when the client's own record shows a fault disturbing a
// call in flight (a client the fault killed before it made a call was hit,
// but no call in flight was); violated when the client made no call, or when its record
// shows every stream break and none happened (chaosrun's clients record
// every break; any client of a server that keeps no events sees a broken
// call fail, since it cannot resume it).
func faultHit(s ServerRecord, c ClientRecord) Judgement {
	for _, call := range c.Calls {
		if call.Hit != "" {
			return held("%s (call %s)", call.Hit, call.Key)
		}
	}
	diedOfIt := c.Exit != nil && *c.Exit != 0 && !c.Stopped && c.FaultUS >= 0 && c.ExitUS >= c.FaultUS && diedOfFault(c.Died)
	switch {
	case diedOfIt && len(c.Calls) > 0:
		return unknown("the client died of the fault mid-run (%s); whether a call was in flight then, its record does not say", c.Died)
	case c.NoCalls || c.CallsMade.Exact() && c.CallsMade.Hi == 0:
		return violated("the client made no call: no fault can have hit one")
	case c.Program == "naive" || c.Program == "resumable" || c.Program == "go-sdk" || c.Program == "mcp-go":
		return violated("its history records every stream break and failure, and shows none in a call")
	case !s.Resumable && s.Program != "":
		return violated("%s keeps no events to resume, so a broken call fails in the client's record, and none did", s.Program)
	}
	return unknown("no call failed in its record; its SDK may have resumed a break unseen")
}

// diedOfFault reports whether a client's fatal line blames what faults do
// (a 503 in the server's place, a reset, an end of stream, a refused
// connection, a timeout), rather than the server's answer (a protocol
// version it refuses, say), which would have killed it without any fault.
func diedOfFault(fatal string) bool {
	if status503.MatchString(fatal) {
		return true
	}
	for _, s := range []string{"Service Unavailable", "reset", "EOF", "refused", "broken pipe", "deadline exceeded", "timeout"} {
		if strings.Contains(fatal, s) {
			return true
		}
	}
	return false
}

// workloadError is held when the server refused calls and ran none.
func workloadError(s ServerRecord, c ClientRecord) Judgement {
	if s.Refused == "" {
		return unknown("the server refused no call")
	}
	for _, e := range s.Executions {
		if e.Committed {
			return violated("the server refused a call (%s) but ran %s (%s)", s.Refused, e.Tool, e.Evidence)
		}
	}
	return held("the server refused the calls before running any: %s", s.Refused)
}

// duplicates counts executions beyond one of a non-idempotent operation:
// of each value of the key the workload declares (the user's word for what
// one operation is), or without one, of each logical call.
func duplicates(s ServerRecord, c ClientRecord) Range {
	allIdempotent, keyed := len(c.Calls) > 0, len(c.Calls) > 0
	for _, call := range c.Calls {
		allIdempotent = allIdempotent && call.Idempotent
		keyed = keyed && call.Keyed && call.Key != ""
	}
	switch {
	case c.NoCalls:
		return Exactly(0, "no call was made")
	case allIdempotent:
		return Exactly(0, "every call is idempotent (the workload says so)")
	case keyed && s.ExecutionsKnown && s.KeysShown:
		perKey := map[string]int64{}
		for _, e := range s.Executions {
			if e.Committed {
				perKey[e.Key]++
			}
		}
		var n int64
		for _, call := range c.Calls {
			if !call.Idempotent && perKey[call.Key] > 1 {
				n += perKey[call.Key] - 1
				perKey[call.Key] = 1 // one operation, counted once
			}
		}
		return Exactly(n, "committed executions per value of the key the workload declares, in the server's record")
	case c.NeverResends:
		return Exactly(0, "the client never sends a call twice (its source): each execution is a call of its own")
	case !s.ExecutionsKnown || !s.KeysShown:
		return Unknown("the server's record does not tie its executions to calls")
	}
	byKey := map[string]int64{}
	for _, e := range s.Executions {
		if e.Committed {
			byKey[e.Key]++
		}
	}
	seen := map[string]bool{}
	var n int64
	for _, call := range c.Calls {
		if call.Key == "" || seen[call.Key] {
			return Unknown("two calls share an operation key: the server's record cannot tell their executions apart")
		}
		seen[call.Key] = true
		if !call.Idempotent && byKey[call.Key] > 1 {
			n += byKey[call.Key] - 1
		}
	}
	return Exactly(n, "committed executions per call in the server's record")
}

// orphaned counts results the server wrote that no client read, but for
// calls the client surfaced as unknown.
func orphaned(s ServerRecord, c ClientRecord) Range {
	if c.NoCalls {
		return Exactly(0, "no call was made")
	}
	if !s.ExecutionsKnown {
		return Unknown("the server's record does not show its results")
	}
	var written, read, surfaced int64
	unknownKeys, unknownRequests := map[string]bool{}, map[string]bool{}
	for _, call := range c.Calls {
		if call.ResultRead {
			read++
		}
		if call.Outcome == OutcomeUnknown {
			unknownKeys[call.Key] = true
			for _, r := range call.Requests {
				unknownRequests[r] = true
			}
		}
	}
	tied := true // every execution of a call surfaced unknown is known as such
	for _, e := range s.Executions {
		if !e.Completed {
			continue
		}
		written++
		switch {
		case e.Request != "" && unknownRequests[e.Request], e.Request == "" && e.Key != "" && unknownKeys[e.Key]:
			surfaced++
		case e.Request == "" && e.Key == "":
			tied = false
		}
	}
	if len(unknownKeys) > 0 && !tied {
		return Unknown("the client surfaced unknown outcomes, and the server's record does not tie results to calls")
	}
	return Exactly(max(written-read-surfaced, 0), "results the server wrote, less those its client read or surfaced as unknown")
}

// silentLoss judges no_silent_event_loss from the events missing at the
// client: held when none is, violated when some are missing and the client
// read every call's result (so it never gave up a stream), else unknown.
func silentLoss(missing Range, c ClientRecord) Judgement {
	if !missing.Known {
		return unknown("events missing: %s", missing.Source)
	}
	if missing.Hi == 0 {
		return held("every event the server sent was received")
	}
	// Events of a stream the client gave up (an attempt it abandoned, a
	// call it left unknown) are unread, not lost: only a client that read
	// every call's result on its one attempt lost the missing ones.
	gapped := c.Gapped
	readAll := len(c.Calls) > 0
	for _, call := range c.Calls {
		readAll = readAll && call.Outcome == OutcomeOK && call.Attempts <= 1
	}
	if readAll && gapped.Known && missing.Lo > gapped.Hi {
		return violated("%s events missing at the client, %s inside surfaced gaps, and it read every call's result on its one attempt", missing, gapped)
	}
	return unknown("%s events missing, on streams the client gave up or inside gaps", missing)
}

// outcomes judges outcomes_resolved from the client's record.
func outcomes(s ServerRecord, c ClientRecord) Judgement {
	committed := map[string]int64{}
	for _, e := range s.Executions {
		if e.Committed {
			committed[e.Key]++
		}
	}
	var unresolved, blind, failedCommitted []string
	for _, call := range c.Calls {
		switch {
		case call.Outcome == OutcomeNone:
			unresolved = append(unresolved, call.Key)
		case call.Outcome == OutcomeFailed && !call.Idempotent && s.ExecutionsKnown && s.KeysShown && committed[call.Key] > 0:
			failedCommitted = append(failedCommitted, call.Key)
		}
		if !call.Idempotent && call.Attempts > 1 && s.ExecutionsKnown && s.KeysShown && committed[call.Key] > 1 {
			blind = append(blind, call.Key)
		}
	}
	switch {
	case len(blind) > 0:
		return violated("calls retried after an attempt that reached the server and whose outcome was never read: %s", strings.Join(blind, ", "))
	case len(failedCommitted) > 0:
		return violated("calls reported failed whose side effect was committed: %s", strings.Join(failedCommitted, ", "))
	case len(unresolved) > 0 && !c.Abandoned:
		return violated("calls that never ended: %s", strings.Join(unresolved, ", "))
	case c.Abandoned:
		return unknown("the client gives calls up when it stops without reporting them")
	}
	for _, call := range c.Calls {
		if !call.Idempotent && call.Attempts > 1 && !c.NeverResends {
			return unknown("call %s was sent %d times, and the server's record does not say which attempt ran", call.Key, call.Attempts)
		}
		if call.Outcome == OutcomeFailed && !call.Idempotent && !(s.ExecutionsKnown && s.KeysShown) {
			return unknown("call %s was reported failed, and the server's record does not say whether it ran", call.Key)
		}
	}
	return held("every call ended (%d), none retried blindly, none reported failed after it ran", len(c.Calls))
}

// fromCount judges an invariant that holds when a count is zero.
func fromCount(r Range, what string) Judgement {
	switch {
	case !r.Known:
		return unknown("%s: %s", what, r.Source)
	case r.Lo > 0:
		return violated("%s %s (%s)", r, what, r.Source)
	case r.Hi == 0:
		return held("no %s (%s)", what, r.Source)
	}
	return unknown("%s %s", r, what)
}

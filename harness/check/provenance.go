package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/faults"
)

// provenanceOf says what each figure of a verdict is, where it is not a
// plain count of recorded facts (see [Provenance]): figures of the
// server's side read from the wire (acc.wire), and figures of the client's
// side read from a history derived from the client edge (!j.Own).
func provenanceOf(in Input, j *Judged, acc *Accounts) map[string]Provenance {
	p := provenance{}
	if acc.wire != nil {
		wireSide(p, acc)
	}
	if len(acc.NameForks) > 0 {
		p.note("forks", UpperBound, fmt.Sprintf("%s counted among sessions known only by the client name given in initialize: two processes, or workers, may share a name",
			count(len(acc.NameForks), "fork")))
	}
	if len(acc.StoppedForks) > 0 {
		p.note("forks", UpperBound, fmt.Sprintf("%s counted whose earlier session may have ended when the server was stopped (crashed or restarted), which the wire cannot see",
			count(len(acc.StoppedForks), "fork")))
	}
	if len(acc.PossibleRetries) > 0 {
		p.note("blind_retries", LowerBound, fmt.Sprintf("%s more repeated operations that only their arguments name, which may have been new calls",
			count(len(acc.PossibleRetries), "invoke")))
	}
	if !acc.Own && len(acc.Orphaned) > 0 {
		p.note("orphaned_results", LowerBound, "of a client judged from the wire, only results of calls it cancelled are known unread; one delivered to it may not have been read, and one never delivered it may have surfaced")
		p.note("orphaned_surfaced", Unknown, "whether a client judged from the wire surfaced a result it never got, the wire cannot see")
	}
	if !j.Own && j.derived != nil {
		if why := connectRefusals(in.Faults); why != "" {
			p.note("calls", LowerBound, "the client's calls are those whose request crossed the client edge, and "+why)
		}
		if j.derived.repeated > 0 {
			p.note("calls", UpperBound, fmt.Sprintf("%s sent more than once with the same arguments and no operation key: each request counts as a call, and some may have been retries",
				count(j.derived.repeated, "operation")))
		}
		if j.derived.merged > 0 {
			why := fmt.Sprintf("%s named by its key was requested more than once: it counts as one call, and some requests may have been calls of their own",
				count(j.derived.merged, "operation"))
			p.note("calls", LowerBound, why)
			p.note("calls_ok", Unknown, why)
			p.note("calls_failed", Unknown, why)
		}
		clientSide(p, acc, j.derived)
	}
	if len(p) == 0 {
		return nil
	}
	return p
}

// clientSide notes the figures of a history derived from the client edge:
// the wire sees what was delivered to the client, not what the client
// made of it.
func clientSide(p provenance, acc *Accounts, d *derivedHistory) {
	why := "a client judged from the wire ends a call when its answer crosses the client edge, though it may have given the call up before, or failed one whose answer never came"
	p.note("calls_ok", UpperBound, why)
	p.note("calls_failed", LowerBound, why)
	for _, name := range []string{"calls_unknown", "calls_unresolved"} {
		p.note(name, Unknown, "what a client judged from the wire concluded of a call whose answer never came, the wire cannot see")
	}
	if d.late > 0 {
		p.note("events_received", UpperBound, fmt.Sprintf("%s delivered after its call's answer, which a client may drop", count(d.late, "event was", "events were")))
	}
}

// wireSide notes the figures of an account read from the wire's server
// edge.
func wireSide(p provenance, acc *Accounts) {
	if acc.Charges > 0 {
		p.note("charges", Derived, "invocations that reached the server and took effect by the wire's rule (answered, acknowledged, or received by a live process); the wire cannot see a side effect itself")
	}
	if uncertain := acc.Uncertain; uncertain > 0 {
		why := fmt.Sprintf("%s more may have taken effect, which the wire cannot establish", count(uncertain, "invocation"))
		p.note("charges", LowerBound, why)
	}
	if acc.UncertainExtra > 0 || len(acc.Undistinguished) > 0 {
		p.note("duplicates", LowerBound, fmt.Sprintf("up to %s more: invocations the wire cannot establish on orders invoked more than once, or orders only their arguments tell apart",
			count(acc.UncertainExtra+acc.DuplicateChargesOf(acc.Undistinguished), "duplicate")))
	}
	if n := acc.wire.unansweredInits; n > 0 {
		p.note("sessions", LowerBound, fmt.Sprintf("%s reached the server and no answer crossed back: it may have opened a session for each", count(n, "initialize request")))
	}
	received := false
	var partial, withEvents []string
	for key, s := range acc.wire.sight {
		if s.Partial == "" {
			continue
		}
		partial = append(partial, s.Partial)
		if acc.wire.keys[key] != nil {
			withEvents = append(withEvents, s.Partial)
		}
		if s.BrokeUS > 0 && acc.receivedAfter(key, s.BrokeUS) {
			received = true
		}
	}
	slices.Sort(partial)
	slices.Sort(withEvents)
	d := acc.DerivedEvents
	for _, f := range []struct {
		name string
		n    int
	}{{"events_emitted", d.Emitted}, {"events_lost_silent", d.LostSilent}, {"events_lost_surfaced", d.LostSurfaced}, {"events_unread", d.Unread}} {
		if f.n > 0 {
			p.note(f.name, Derived, fmt.Sprintf("%s of them derived from event ids a resumed stream skipped", count(f.n, "event")))
		}
	}
	if len(partial) > 0 {
		why := firstAndMore(partial)
		for _, name := range []string{"events_emitted", "events_lost_surfaced", "events_unread"} {
			p.note(name, LowerBound, why)
		}
		if received {
			p.note("events_lost_silent", LowerBound, firstAndMore(withEvents)+"; the client received more of the stream afterwards")
		}
	}
	for _, o := range acc.Orphaned {
		if o.Derived != "" {
			name := "orphaned_results"
			if o.Surfaced {
				name = "orphaned_surfaced"
			}
			p.note(name, Derived, "results a call that reached the server wrote into a stream nothing carried")
		}
	}
}

// firstAndMore renders the first reason and how many more there are.
func firstAndMore(why []string) string {
	if len(why) == 1 {
		return why[0]
	}
	return fmt.Sprintf("%s (and %d streams more)", why[0], len(why)-1)
}

// connectRefusals says which faults may have kept a client's request from
// crossing the client edge whole (faults.Effect.Cuts: a refused or cut
// connection, a stopped server), or "" when none did.
func connectRefusals(log []faults.Entry) string {
	var why []string
	for _, e := range log {
		if faults.EffectOf(e).Cuts {
			why = append(why, fmt.Sprintf("fault %d (%s on %s)", e.Index, e.Kind, e.Target))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return strings.Join(why, ", ") + " may have refused or cut connections: a call whose request never crossed whole is not seen"
}

package check

import (
	"fmt"
	"strings"

	"github.com/chaosrun/chaosrun/targets/history"
)

// refsShown bounds the record numbers listed in one evidence line.
const refsShown = 5

// noDuplicates: each order was charged at most once.
func noDuplicates(acc *Accounts) Result {
	var ev evidence
	for _, d := range acc.Duplicates {
		ev.add("%s: order %s charged %d times", ledgerRefs(d.Charges), d.OrderID, len(d.Charges))
	}
	if len(acc.Duplicates) == 0 {
		return ev.result(NoDuplicateSideEffects, true,
			count(acc.Charges, "charge")+", no order charged more than once")
	}
	return ev.result(NoDuplicateSideEffects, false, fmt.Sprintf("%s charged more than once: %s among %d",
		count(len(acc.Duplicates), "order"), count(acc.DuplicateCharges(), "extra charge"), acc.Charges))
}

// noSilentLoss: every emitted event was received, lies inside a gap the
// client surfaced, or lies past the client's last look at a stream it
// abandoned.
func noSilentLoss(acc *Accounts) Result {
	var ev evidence
	e := acc.Events
	summary := fmt.Sprintf("%d events emitted: %d received, %d lost silently, %d lost inside surfaced gaps, %d unread",
		e.Emitted, e.Received, e.LostSilent, e.LostSurfaced, e.Unread)
	for _, s := range acc.Streams {
		if s.LostSilent == 0 {
			continue
		}
		ns := make([]int64, len(s.Silent))
		for i, l := range s.Silent {
			ns[i] = l.N
		}
		ev.add("%s: %d of %d events of %s lost silently (seq %d..%d); the client received past them at history line %d",
			ledgerRefs(ns), s.LostSilent, s.Emitted, streamName(s.StreamKey),
			s.Silent[0].Seq, s.Silent[len(s.Silent)-1].Seq, s.Later)
	}
	if e.LostSilent > 0 {
		return ev.result(NoSilentEventLoss, false, summary)
	}
	for _, s := range acc.Streams {
		if s.LostSurfaced > 0 {
			ev.add("%s: %s of %s lost inside these surfaced gaps", historyRefs(s.Gaps), count(s.LostSurfaced, "event"), streamName(s.StreamKey))
		}
	}
	return ev.result(NoSilentEventLoss, true, summary)
}

// noFork: no logical client held two live sessions at once.
func noFork(acc *Accounts) Result {
	var ev evidence
	clients := map[string]bool{}
	for _, s := range acc.Sessions {
		if s.Client != "" {
			clients[s.Client] = true
		}
	}
	for _, f := range acc.Forks {
		ev.add("ledger n=%d, n=%d: %s opened session %s at %s while session %s (opened at %s) was live",
			f.Live.Opened, f.New.Opened, f.Client, f.New.ID, seconds(f.New.OpenedUS), f.Live.ID, seconds(f.Live.OpenedUS))
	}
	if len(acc.Forks) == 0 {
		return ev.result(NoSessionFork, true, fmt.Sprintf("%s for %s; no client held two live sessions at once",
			count(len(acc.Sessions), "session"), count(len(clients), "client")))
	}
	return ev.result(NoSessionFork, false, count(len(acc.Forks), "session")+" opened while the same client held another live")
}

// noOrphans: every result written was read by some client outcome, or
// belongs to a call its client surfaced as an unknown outcome.
func noOrphans(acc *Accounts) Result {
	var ev evidence
	silent, surfaced := 0, 0
	for _, o := range acc.Orphaned {
		if o.Surfaced {
			surfaced++
			continue
		}
		silent++
		ev.add("ledger n=%d: result of %s (event id %d) written, never read", o.N, streamName(o.StreamKey), o.EventID)
	}
	note := ""
	if surfaced > 0 {
		note = fmt.Sprintf("; %d unread by calls their clients surfaced as unknown outcomes", surfaced)
	}
	switch {
	case silent > 0:
		return ev.result(NoOrphanedResults, false, fmt.Sprintf("%d of %s never read%s", silent, count(acc.Results, "result written", "results written"), note))
	case acc.Results == 0:
		return ev.result(NoOrphanedResults, true, "no result written")
	}
	return ev.result(NoOrphanedResults, true, count(acc.Results, "result")+" written, every one read by a client"+note)
}

// outcomesResolved: every call ended ok, fail or unknown, and no
// non-idempotent call was retried after an unknown outcome.
func outcomesResolved(acc *Accounts) Result {
	var ev evidence
	counts := map[history.Kind]int{}
	for _, c := range acc.Calls {
		counts[c.Outcome]++
		if !c.Resolved() {
			ev.add("history line %d: call %s of %s (order %s) invoked, never resolved after it", c.Last, c.ID, c.Client, c.OrderID)
		}
	}
	for _, b := range acc.BlindRetries {
		ev.add("history lines %d, %d: %s invoked non-idempotent order %s again after its unknown outcome",
			b.Unknown, b.Invoke, b.Client, b.OrderID)
	}
	unresolved := counts[""]
	if unresolved == 0 && len(acc.BlindRetries) == 0 {
		return ev.result(OutcomesResolved, true, fmt.Sprintf("%s: %d ok, %d failed, %d unknown; no blind retry",
			count(len(acc.Calls), "call"), counts[history.KindOK], counts[history.KindFail], counts[history.KindUnknown]))
	}
	return ev.result(OutcomesResolved, false, fmt.Sprintf("%d of %s never resolved; %s after an unknown outcome",
		unresolved, count(len(acc.Calls), "call"), count(len(acc.BlindRetries), "blind retry", "blind retries")))
}

func streamName(k StreamKey) string {
	return fmt.Sprintf("request %s in session %s", k.RequestID, k.Session)
}

// ledgerRefs renders record numbers as "ledger n=1, n=2 (+3 more)".
func ledgerRefs(ns []int64) string {
	parts := make([]string, 0, refsShown)
	for _, n := range ns[:min(len(ns), refsShown)] {
		parts = append(parts, fmt.Sprintf("n=%d", n))
	}
	return "ledger " + strings.Join(parts, ", ") + more(len(ns))
}

// historyRefs renders lines as "history line 4" or "history lines 4, 9".
func historyRefs(lines []int) string {
	parts := make([]string, 0, refsShown)
	for _, l := range lines[:min(len(lines), refsShown)] {
		parts = append(parts, fmt.Sprint(l))
	}
	word := "line"
	if len(lines) > 1 {
		word = "lines"
	}
	return "history " + word + " " + strings.Join(parts, ", ") + more(len(lines))
}

// count renders n with its noun: "1 charge", "2 charges". many is the
// plural when it is not one+"s".
func count(n int, one string, many ...string) string {
	switch {
	case n == 1:
		return "1 " + one
	case len(many) > 0:
		return fmt.Sprintf("%d %s", n, many[0])
	}
	return fmt.Sprintf("%d %ss", n, one)
}

func more(n int) string {
	if n <= refsShown {
		return ""
	}
	return fmt.Sprintf(" (+%d more)", n-refsShown)
}

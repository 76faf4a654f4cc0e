package check

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/targets/history"
)

// refsShown bounds the record numbers listed in one evidence line.
const refsShown = 5

// noDuplicates: each order was charged at most once. On the wire, an order
// invoked twice is a duplicate only when something proves the two
// invocations one operation (an operation key, or the issuing client's own
// record) and that both took effect; otherwise it cannot be told.
func noDuplicates(acc *Accounts) Result {
	var ev evidence
	for _, d := range acc.Duplicates {
		ev.add("%s: order %s charged %d times", acc.refs(d.Charges), d.OrderID, len(d.Charges))
	}
	if len(acc.Duplicates) > 0 {
		return ev.result(NoDuplicateSideEffects, false, fmt.Sprintf("%s charged more than once: %s among %d",
			count(len(acc.Duplicates), "order"), count(acc.DuplicateCharges(), "extra charge"), acc.Charges))
	}
	for _, d := range acc.Undistinguished {
		ev.add("%s: %d invocations of %s, which only their arguments tell apart: the same call retried, or calls of their own",
			acc.refs(d.Charges), len(d.Charges), d.OrderID)
	}
	for _, p := range acc.Possible {
		ev.add("%s: order %s charged %s for certain, and possibly again by %s: %s",
			acc.refs(append(slices.Clone(p.Charges), p.Uncertain...)), p.OrderID, times(len(p.Charges)),
			count(len(p.Uncertain), "invocation"), strings.Join(slices.Compact(slices.Clone(p.Why)), "; "))
	}
	switch {
	case len(acc.Undistinguished) > 0 && len(acc.Possible) > 0:
		return ev.cannotTell(NoDuplicateSideEffects, fmt.Sprintf("%s invoked more than once are told apart only by their arguments, and %s may have been charged twice",
			count(len(acc.Undistinguished), "operation"), count(len(acc.Possible), "order")))
	case len(acc.Undistinguished) > 0:
		return ev.cannotTell(NoDuplicateSideEffects, fmt.Sprintf("%s invoked more than once with the same arguments and no operation key: the wire cannot tell a retry from a call of its own (name the argument that identifies an operation with key:)",
			count(len(acc.Undistinguished), "operation")))
	case len(acc.Possible) > 0:
		p := acc.Possible[0]
		return ev.cannotTell(NoDuplicateSideEffects, fmt.Sprintf("%s charged at most once for certain may have been charged again (order %s: %s)",
			count(len(acc.Possible), "order"), p.OrderID, p.Why[0]))
	}
	return ev.result(NoDuplicateSideEffects, true, count(acc.Charges, "charge")+", no order charged more than once")
}

// times renders a count of times: "once", "twice", "3 times", "never".
func times(n int) string {
	switch n {
	case 0:
		return "never"
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// noSilentLoss: every emitted event was received, lies inside a gap the
// client surfaced, or lies past the client's last look at a stream it
// abandoned. On the wire it cannot be told when a stream broke, the server
// may have emitted events nothing carried, and the client went on to
// receive more of the stream with no gap surfaced.
func noSilentLoss(acc *Accounts) Result {
	var ev evidence
	e := acc.Events
	summary := fmt.Sprintf("%d events emitted: %d received, %d lost silently, %d lost inside surfaced gaps, %d unread",
		e.Emitted, e.Received, e.LostSilent, e.LostSurfaced, e.Unread)
	for _, s := range acc.Streams {
		if s.LostSilent == 0 {
			continue
		}
		ev.add("%s: %d of %d events of %s lost silently (seq %d..%d); the client received past them at %s",
			acc.eventRefs(s.Silent), s.LostSilent, s.Emitted, streamName(s.StreamKey),
			s.Silent[0].Seq, s.Silent[len(s.Silent)-1].Seq, acc.lines.many(s.Later))
	}
	if e.LostSilent > 0 {
		return ev.result(NoSilentEventLoss, false, summary)
	}
	if unseen := acc.unseenLoss(); len(unseen) > 0 {
		for _, u := range unseen {
			ev.add("%s: %s", u.at, u.why)
		}
		return ev.cannotTell(NoSilentEventLoss, fmt.Sprintf("%s; %s broke, and the client received more of it afterwards, with no gap surfaced and no event ids that prove what the server emitted meanwhile",
			summary, count(len(unseen), "stream")))
	}
	for _, s := range acc.Streams {
		if s.LostSurfaced > 0 {
			ev.add("%s: %s of %s lost inside these surfaced gaps", acc.lines.many(s.Gaps...), count(s.LostSurfaced, "event"), streamName(s.StreamKey))
		}
	}
	return ev.result(NoSilentEventLoss, true, summary)
}

// unseenLoss lists, for an account read from the wire, the streams where
// events may have been lost silently out of its sight: the stream broke,
// the edge may not have carried what the server emitted meanwhile, and the
// client received more of it afterwards with no gap surfaced.
func (acc *Accounts) unseenLoss() []unseenStream {
	if acc.wire == nil {
		return nil
	}
	var out []unseenStream
	for _, s := range acc.Streams {
		sight := acc.wire.sight[s.StreamKey]
		if sight == nil || sight.Partial == "" || sight.BrokeUS == 0 || !acc.receivedAfter(s.StreamKey, sight.BrokeUS) {
			continue
		}
		out = append(out, unseenStream{at: acc.ref(sight.BrokeN), why: sight.Partial})
	}
	return out
}

// unseenStream is a stream whose events the wire may not have seen: the
// record where it stopped being carried, and why that hides events.
type unseenStream struct {
	at  citation
	why string
}

// noFork: no logical client held two live sessions at once. Who held a
// session is proven by the client's own history; sessions known only by
// the name a client gave in initialize (a client of the user's own, judged
// from the wire) may belong to two processes, or workers, that share it.
func noFork(acc *Accounts) Result {
	var ev evidence
	clients := map[string]bool{}
	for _, s := range acc.Sessions {
		if s.Client != "" {
			clients[s.Client] = true
		}
	}
	for _, f := range acc.Forks {
		ev.add("%s: %s opened session %s at %s while session %s (opened at %s) was live",
			acc.refs([]int64{f.Live.Opened, f.New.Opened}), f.Client, f.New.ID, seconds(f.New.OpenedUS), f.Live.ID, seconds(f.Live.OpenedUS))
	}
	if len(acc.Forks) > 0 {
		return ev.result(NoSessionFork, false, count(len(acc.Forks), "session")+" opened while the same client held another live")
	}
	for _, f := range acc.NameForks {
		ev.add("%s: session %s opened at %s under the client name %q while session %s (opened at %s) of that name was live",
			acc.refs([]int64{f.Live.Opened, f.New.Opened}), f.New.ID, seconds(f.New.OpenedUS), f.Client, f.Live.ID, seconds(f.Live.OpenedUS))
	}
	if len(acc.NameForks) > 0 {
		return ev.cannotTell(NoSessionFork, fmt.Sprintf("%s opened while another of the same client name was live; the name is all that ties them, and two processes or workers may share one",
			count(len(acc.NameForks), "session")))
	}
	for _, f := range acc.StoppedForks {
		ev.add("%s: session %s opened at %s; session %s (opened at %s) was last seen alive before the server was stopped at %s",
			acc.refs([]int64{f.Live.Opened, f.New.Opened}), f.New.ID, seconds(f.New.OpenedUS), f.Live.ID, seconds(f.Live.OpenedUS), seconds(f.StoppedUS))
	}
	if len(acc.StoppedForks) > 0 {
		return ev.cannotTell(NoSessionFork, fmt.Sprintf("%s opened after the server was stopped (crashed or restarted) while an earlier session of the same client was not seen to end: a server that keeps sessions in memory lost it then, one with a durable store did not, and the wire shows neither",
			count(len(acc.StoppedForks), "session")))
	}
	return ev.result(NoSessionFork, true, fmt.Sprintf("%s for %s; no client held two live sessions at once",
		count(len(acc.Sessions), "session"), count(len(clients), "client")))
}

// noOrphans: every result written was read by some client outcome, or
// belongs to a call its client surfaced as an unknown outcome; a result the
// server dropped (its session gone) counts as one nobody read. Of a client
// judged from the wire, it cannot be told unless the client cancelled the
// call (notifications/cancelled) before its result: the wire sees a result
// delivered, not read (the client may have given the call up first), and
// not whether the client surfaced one that never came.
func noOrphans(acc *Accounts) Result {
	var ev evidence
	silent, surfaced := 0, 0
	for _, o := range acc.Orphaned {
		if o.Surfaced {
			surfaced++
			continue
		}
		silent++
		if o.Dropped {
			ev.add("%s: result of %s dropped by the server (its session was gone), never delivered", acc.ref(o.N), streamName(o.StreamKey))
			continue
		}
		if o.Derived != "" {
			ev.add("%s: result of %s never read (%s)", acc.derivedRef(o.N), streamName(o.StreamKey), o.Derived)
			continue
		}
		ev.add("%s: result of %s (event id %d) written, never read", acc.ref(o.N), streamName(o.StreamKey), o.EventID)
	}
	note := ""
	if surfaced > 0 {
		note = fmt.Sprintf("; %d unread by calls their clients surfaced as unknown outcomes", surfaced)
	}
	results := count(acc.Results, "result written", "results written")
	if d := acc.dropped(); d > 0 {
		results = fmt.Sprintf("%s (%d written, %d dropped by the server)", count(acc.Results+d, "result"), acc.Results, d)
	}
	abandoned := 0
	for _, o := range acc.Orphaned {
		if o.Abandoned && !o.Surfaced {
			abandoned++
		}
	}
	switch {
	case !acc.Own && abandoned > 0:
		return ev.result(NoOrphanedResults, false, fmt.Sprintf("%d of %s written for calls their client had cancelled (notifications/cancelled), never read",
			abandoned, results))
	case !acc.Own && acc.Results+acc.dropped() > 0:
		return ev.cannotTell(NoOrphanedResults, fmt.Sprintf("%s; %d never reached the client edge%s. Of a client judged from the wire, whether it read a result delivered to it (it may have given the call up first) or surfaced one that never came, the wire cannot see",
			results, silent, note))
	case silent > 0:
		return ev.result(NoOrphanedResults, false, fmt.Sprintf("%d of %s never read%s", silent, results, note))
	case acc.Results == 0 && acc.dropped() == 0:
		return ev.result(NoOrphanedResults, true, "no result written")
	case acc.Results == 0:
		return ev.result(NoOrphanedResults, true, results+note)
	}
	return ev.result(NoOrphanedResults, true, count(acc.Results, "result")+" written, every one read by a client"+note)
}

// outcomesResolved: every call ended ok, fail or unknown, no fail was
// reported for a committed side effect, and no non-idempotent call was
// retried blindly. Of a client judged from the wire (no history of its
// own) it cannot be told unless violated: what the client concluded of a
// call, the wire cannot see (an answer delivered may have come after it
// gave the call up), and only what it did next, a second invocation, is
// judged.
func outcomesResolved(acc *Accounts) Result {
	var ev evidence
	counts := map[history.Kind]int{}
	unresolved := 0
	for _, c := range acc.Calls {
		counts[c.Outcome]++
		if !c.Resolved() && acc.Own {
			unresolved++
			ev.add("%s: call %s of %s (order %s) invoked, never resolved after it", acc.lines.many(c.Last), c.ID, c.Client, c.OrderID)
		}
	}
	for _, f := range acc.FalseFails {
		ev.add("%s, %s: %s reported call %s (order %s) failed, but its side effect was committed",
			acc.lines.many(f.Line), acc.refs(f.Commits), f.Client, f.Call, f.OrderID)
	}
	for _, b := range acc.BlindRetries {
		if b.Unknown > 0 {
			ev.add("%s: %s invoked non-idempotent order %s again after its unknown outcome",
				acc.lines.many(b.Unknown, b.Invoke), b.Client, b.OrderID)
			continue
		}
		ev.add("%s, %s: %s invoked non-idempotent order %s again, although the earlier attempt had reached the server and its outcome was never read",
			acc.lines.many(b.Prior, b.Invoke), acc.ref(b.Started), b.Client, b.OrderID)
	}
	var problems []string
	if unresolved > 0 {
		problems = append(problems, fmt.Sprintf("%d of %s never resolved", unresolved, count(len(acc.Calls), "call")))
	}
	if n := len(acc.BlindRetries); n > 0 {
		problems = append(problems, count(n, "blind retry", "blind retries"))
	}
	if n := len(acc.FalseFails); n > 0 {
		problems = append(problems, count(n, "failure", "failures")+" reported for committed side effects")
	}
	if len(problems) > 0 {
		return ev.result(OutcomesResolved, false, strings.Join(problems, "; "))
	}
	tally := fmt.Sprintf("%s: %d ok, %d failed, %d unknown", count(len(acc.Calls), "call"),
		counts[history.KindOK], counts[history.KindFail], counts[history.KindUnknown])
	var unseen []string
	if !acc.Own && len(acc.Calls) > 0 {
		unseen = append(unseen, "how a client judged from the wire concluded its calls, the wire cannot see: an answer delivered may have come after it gave the call up, and one that never came it may have failed or surfaced unknown")
	}
	if n := counts[""]; n > 0 {
		for _, c := range acc.Calls {
			if !c.Resolved() {
				ev.add("%s: call %s of %s (order %s): no answer crossed the client edge", acc.lines.many(c.Last), c.ID, c.Client, c.OrderID)
			}
		}
		unseen = append(unseen, fmt.Sprintf("%s got no answer across the client edge, and what the client concluded of them the wire cannot see", count(n, "call")))
	}
	if len(acc.PossibleRetries) > 0 {
		for _, b := range acc.PossibleRetries {
			ev.add("%s: %s invoked %s again with the same arguments after an attempt whose outcome it never read",
				acc.lines.many(cmp.Or(b.Unknown, b.Prior), b.Invoke), b.Client, b.OrderID)
		}
		unseen = append(unseen, fmt.Sprintf("%s repeated an operation that only its arguments name: a blind retry, or a call of its own",
			count(len(acc.PossibleRetries), "invoke")))
	}
	if len(unseen) > 0 {
		return ev.cannotTell(OutcomesResolved, tally+"; "+strings.Join(unseen, "; "))
	}
	return ev.result(OutcomesResolved, true, tally+"; no blind retry")
}

func streamName(k StreamKey) string {
	if k.Session == "" {
		return fmt.Sprintf("request %s (no session)", k.RequestID)
	}
	return fmt.Sprintf("request %s in session %s", k.RequestID, k.Session)
}

// refs cites record numbers of the account's ledger: "ledger n=1, n=2
// (+3 more)", or for a ledger derived from the wire "wire records 1, 2".
// Every number is cited, the ones past refsShown too.
func (acc *Accounts) refs(ns []int64) citation {
	parts := make([]string, 0, refsShown)
	file := RefLedger
	if acc.Source == SourceWire {
		file = RefWire
	}
	c := citation{}
	for i, n := range ns {
		c.refs = append(c.refs, Ref{File: file, N: n})
		if i >= refsShown {
			continue
		}
		if acc.Source == SourceWire {
			parts = append(parts, fmt.Sprint(n))
		} else {
			parts = append(parts, fmt.Sprintf("n=%d", n))
		}
	}
	if acc.Source != SourceWire {
		c.text = "ledger " + strings.Join(parts, ", ") + more(len(ns))
		return c
	}
	word := "record"
	if len(ns) > 1 {
		word = "records"
	}
	c.text = "wire " + word + " " + strings.Join(parts, ", ") + more(len(ns))
	return c
}

// derivedRef cites the wire record a fact was derived from: "derived from
// wire record 12".
func (acc *Accounts) derivedRef(n int64) citation {
	return citation{text: fmt.Sprintf("derived from wire record %d", n), refs: []Ref{{File: RefWire, N: n, Derived: true}}}
}

// eventRefs cites the records of emitted events; those derived from event
// ids cite the record they were derived from, and the text says how many.
func (acc *Accounts) eventRefs(events []EmittedEvent) citation {
	ns := make([]int64, len(events))
	derived := 0
	for i, e := range events {
		ns[i] = e.N
		if e.Derived {
			derived++
		}
	}
	c := acc.refs(ns)
	if derived == 0 {
		return c
	}
	for i, e := range events {
		c.refs[i].Derived = e.Derived
	}
	c.text += fmt.Sprintf(" (%d of them derived from event ids a resume skipped, citing the record that resumed)", derived)
	return c
}

// ref cites one record number of the account's ledger.
func (acc *Accounts) ref(n int64) citation { return acc.refs([]int64{n}) }

// historyLines names history lines in evidence. Nil is history.jsonl:
// "history line 4", "history lines 4, 9". For a history derived from the
// wire's client edge it holds the wire record of each derived record, and
// names those: "wire records 12, 30".
type historyLines []int64

func (h historyLines) many(lines ...int) citation {
	parts := make([]string, 0, refsShown)
	c := citation{}
	for i, l := range lines {
		r := Ref{File: RefHistory, N: int64(l)}
		if h != nil && l >= 1 && l <= len(h) {
			r = Ref{File: RefWire, N: h[l-1]}
		}
		c.refs = append(c.refs, r)
		if i < refsShown {
			parts = append(parts, fmt.Sprint(r.N))
		}
	}
	file, word := "history", "line"
	if h != nil {
		file, word = "wire", "record" // a record's n: with several proxy agents not its line in wire.jsonl
	}
	if len(lines) > 1 {
		word += "s"
	}
	c.text = file + " " + word + " " + strings.Join(parts, ", ") + more(len(lines))
	return c
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

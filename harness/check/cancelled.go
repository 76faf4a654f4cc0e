package check

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// CancelledCommit is a side effect the server committed after it saw the
// call that made it cancelled (call_cancelled before the charge, for the
// same request): at 2026-07-28, a tool that was committing when its
// response stream closed. Its client never hears of it from the server, so
// the client must account for it itself.
type CancelledCommit struct {
	StreamKey
	Client    string
	OrderID   string
	Cancelled int64 // N of call_cancelled
	Commit    int64 // N of the charge
	// Surfaced says how the client accounted for it: "unknown" (it
	// reported the call's outcome unknown), "deduplicated" (a re-issue
	// under the same idempotency key met the commit and moved no money), or
	// "" (it did not: it reported the call ok or failed on the strength of
	// another attempt, or not at all).
	Surfaced string
	Line     int          // history line of the call's last outcome, 0 when none
	Outcome  history.Kind // that outcome
}

// cancelRef is a call_cancelled or a commit of one request.
type cancelRef struct {
	n       int64
	client  string
	orderID string
}

func (a *accountant) cancelRecord(r *sideeffects.Record) {
	key := StreamKey{Session: r.Session, RequestID: r.RequestID}
	switch {
	case r.Kind == sideeffects.KindCallCancelled:
		if _, seen := a.cancelled[key]; !seen {
			a.cancelled[key] = cancelRef{n: r.N, client: r.Client, orderID: r.OrderID}
		}
	case r.Kind == sideeffects.KindCharge && r.Source != SourceWire:
		a.commits[key] = append(a.commits[key], cancelRef{n: r.N, client: r.Client, orderID: r.OrderID})
	case r.Kind == sideeffects.KindChargeDeduplicated:
		a.deduplicated[r.OrderID] = append(a.deduplicated[r.OrderID], r.N)
	}
}

// cancelledCommits lists, by N of the commit, every side effect committed
// after its call was seen cancelled, with how its client accounted for it.
func (a *accountant) cancelledCommits(calls []Call) []CancelledCommit {
	var out []CancelledCommit
	for key, c := range a.cancelled {
		for _, cm := range a.commits[key] {
			if cm.n < c.n {
				continue
			}
			cc := CancelledCommit{StreamKey: key, Client: cmp.Or(cm.client, c.client), OrderID: cm.orderID, Cancelled: c.n, Commit: cm.n}
			for _, call := range calls {
				if call.Client == cc.Client && call.OrderID == cc.OrderID {
					cc.Line, cc.Outcome = call.Last, call.Outcome
				}
			}
			switch {
			case cc.Outcome == history.KindUnknown:
				cc.Surfaced = "unknown"
			case slices.ContainsFunc(a.deduplicated[cc.OrderID], func(n int64) bool { return n > cm.n }):
				cc.Surfaced = "deduplicated"
			}
			out = append(out, cc)
		}
	}
	slices.SortFunc(out, func(x, y CancelledCommit) int { return cmp.Compare(x.Commit, y.Commit) })
	return out
}

// cancelledCommitsSurfaced: every side effect committed after the server
// saw its call cancelled was accounted for by its client.
func cancelledCommitsSurfaced(acc *Accounts) Result {
	var ev evidence
	unsurfaced := 0
	for _, c := range acc.CancelledCommits {
		if c.Surfaced != "" {
			continue
		}
		unsurfaced++
		told := "never resolved the call"
		if c.Outcome != "" {
			told = fmt.Sprintf("reported the call %s at %s", c.Outcome, acc.lines.many(c.Line))
		}
		ev.add("%s: order %s committed after the server saw %s cancelled; %s %s, as if the cancelled attempt had done nothing",
			acc.refs([]int64{c.Cancelled, c.Commit}), c.OrderID, streamName(c.StreamKey), c.Client, told)
	}
	n := len(acc.CancelledCommits)
	switch {
	case n == 0:
		return ev.result(CancelledCommitsSurfaced, true, "no side effect committed after its call was cancelled")
	case unsurfaced > 0:
		return ev.result(CancelledCommitsSurfaced, false, fmt.Sprintf("%d of %s committed after a cancellation not accounted for by the client",
			unsurfaced, count(n, "side effect")))
	}
	for _, c := range acc.CancelledCommits {
		ev.add("%s: order %s committed after its cancellation; the client accounted for it (%s)", acc.refs([]int64{c.Cancelled, c.Commit}), c.OrderID, c.Surfaced)
	}
	return ev.result(CancelledCommitsSurfaced, true, count(n, "side effect")+" committed after a cancellation, every one accounted for by its client")
}

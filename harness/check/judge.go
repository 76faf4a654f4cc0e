package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
	"github.com/chaosrun/chaosrun/targets/history"
)

// Input is everything one experiment recorded. Times in the records are
// microseconds on the run's base clock.
type Input struct {
	History []history.Record     // history.jsonl, in file order
	Ledger  []sideeffects.Record // ledger.jsonl
	Faults  []faults.Entry       // faults.jsonl
	// Wire is wire.jsonl: what crossed each edge of the fault proxy; empty
	// for runs recorded before the observer, or with it off.
	Wire []wire.Record
	// Ops say how to tell the workload's operations apart on the wire and
	// which are idempotent; nil is [DefaultOps].
	Ops Ops
	// Wall is how long the run took; Scheduled is how long its schedule
	// said it would (scaled tool durations plus scaled fault windows). Both
	// are supplied by the runner and reported as figures only.
	Wall      time.Duration
	Scheduled time.Duration

	_ struct{} // keyed literals only: the input grows
}

// The accounts a result can come from (Result.Account).
const (
	// AccountLedger is the server's own ledger, joined with the history.
	AccountLedger = "ledger"
	// AccountWire is the ledger derived from the wire's server edge (see
	// fromwire.go), joined with the history.
	AccountWire = "wire"
	// AccountBoth means both accounts judged the invariant; a Disagreement
	// says what the wire's said when it differs from the ledger's, which
	// then decides.
	AccountBoth = "both"
	// AccountHistory is the client's history alone: outcomes_resolved when
	// no server-side record shows a call (it then sees unresolved calls,
	// not blind retries).
	AccountHistory = "history"
)

// invariant is one invariant: how to judge it on an account, whether an
// account holds anything for it to judge, and what to say when none does.
type invariant struct {
	id      string
	judge   func(*Accounts) Result
	able    func(*Accounts) bool
	nothing string
	// unseen, when set, explains a difference of the wire's account from
	// the ledger's by what the ledger holds and no wire can carry, or
	// returns "" when the difference is a real disagreement.
	unseen func(in Input, ledger, fromWire *Accounts) string
}

var invariants = []invariant{
	{NoDuplicateSideEffects, noDuplicates, func(a *Accounts) bool {
		return a.has(sideeffects.KindCharge, sideeffects.KindChargeDeduplicated, sideeffects.KindCallStarted)
	}, "no side effect or call recorded: neither the ledger nor the wire shows a tool invoked", unseenUnchargedCalls},
	{NoSilentEventLoss, noSilentLoss, func(a *Accounts) bool { return a.has(sideeffects.KindEventEmitted) },
		"no numbered event emitted: neither the ledger nor the wire shows a progress event", nil},
	{NoSessionFork, noFork, func(a *Accounts) bool { return a.has(sideeffects.KindSessionOpened) },
		"no session recorded: neither the ledger nor the wire shows one opened", unseenEnds},
	{NoOrphanedResults, noOrphans, func(a *Accounts) bool {
		return a.has(sideeffects.KindCallStarted, sideeffects.KindResultWritten, sideeffects.KindResultDropped)
	}, "no call or result recorded: neither the ledger nor the wire shows a tool run", unseenDrops},
	{OutcomesResolved, outcomesResolved, func(a *Accounts) bool {
		return len(a.Calls) > 0 && a.has(sideeffects.KindCallStarted, sideeffects.KindCharge)
	}, "no call recorded: the client neither wrote a history of its calls nor sent one across the wire", nil},
	{CancelledCommitsSurfaced, cancelledCommitsSurfaced, func(a *Accounts) bool { return a.has(sideeffects.KindCallCancelled) },
		"no call seen cancelled: the ledger records no call_cancelled (the wire cannot tell a cancellation from a disconnect)", unseenCancellations},
}

// Judge checks the fault_hit assumption and every invariant, and computes
// the figures. A run whose client wrote no history (a client of the user's
// own) is judged on the history derived from the wire's client edge (see
// tohistory.go), and its evidence names wire records.
//
// Each invariant is judged on every account that holds something for it:
// the ledger's, and the one derived from the wire when a wire record
// exists. One that neither holds anything for is not judged, never held.
// When both judge it, the ledger's result stands and a disagreement of the
// wire's is reported with it (a defect of one account or the other, to be
// fixed, not averaged away).
//
// The verdict is workload_error when the workload could not run at all
// (every call refused before any fault: see workloadRan); else it is
// inconclusive when the fault_hit assumption does not hold, whatever
// the invariants say (they are still reported), or when no invariant could
// be judged; otherwise it is fail when some invariant is violated and pass
// when none is. Figures come from the ledger's account, or the wire's when
// the ledger holds nothing.
func Judge(in Input) Verdict {
	var lines historyLines
	if len(in.History) == 0 && len(in.Wire) > 0 {
		in.History, lines = historyFromWire(in.Wire, in.Ops)
	}
	ledger := Account(in.Ledger, in.History, in.Ops)
	ledger.lines = lines
	var fromWire *Accounts
	if derived := WireLedger(in); derived != nil {
		w := Account(derived, in.History, in.Ops)
		w.Source, w.lines = SourceWire, lines
		fromWire = &w
	}
	primary := &ledger
	if len(in.Ledger) == 0 && fromWire != nil {
		primary = fromWire
	}
	order := timeOrder(in.History)
	v := Verdict{
		Violations:  []string{},
		Assumptions: []Result{workloadRan(in, primary.Calls, lines), faultHit(in, order, primary.Calls, lines)},
		Figures:     figures(in, order, primary),
	}
	judged := 0
	for _, inv := range invariants {
		r := judgeOn(in, inv, &ledger, fromWire)
		v.Invariants = append(v.Invariants, r)
		switch {
		case r.Status == NotJudged:
		case !r.Held():
			judged++
			v.Violations = append(v.Violations, r.ID)
		default:
			judged++
		}
	}
	switch {
	case !v.Assumptions[0].Held():
		v.Verdict = WorkloadError
	case !v.Assumptions[1].Held() || judged == 0:
		v.Verdict = Inconclusive
	case len(v.Violations) > 0:
		v.Verdict = Fail
	default:
		v.Verdict = Pass
	}
	return v
}

// WireHistory is the client history [Judge] judges: in.History, or for a
// client that wrote none (a client of the user's own) the one it derives
// from the wire's client edge (see tohistory.go).
func WireHistory(in Input) []history.Record {
	if len(in.History) > 0 || len(in.Wire) == 0 {
		return in.History
	}
	h, _ := historyFromWire(in.Wire, in.Ops)
	return h
}

// WireLedger is the ledger [Judge] derives from the wire's server edge (see
// fromwire.go): records of Source "wire" whose N is their wire record. It is
// nil when in has no wire record.
func WireLedger(in Input) []sideeffects.Record {
	if len(in.Wire) == 0 {
		return nil
	}
	return ledgerFromWire(in.Wire, in.Ops, serverKills(in.Faults))
}

// judgeOn judges one invariant on the accounts able to, as [Judge] says.
func judgeOn(in Input, inv invariant, ledger, fromWire *Accounts) Result {
	byLedger := inv.able(ledger)
	byWire := fromWire != nil && inv.able(fromWire)
	switch {
	case byLedger && byWire:
		r, w := inv.judge(ledger), inv.judge(fromWire)
		r.Account = AccountBoth
		if r.Status == w.Status {
			return r
		}
		if inv.unseen != nil {
			r.Unseen = inv.unseen(in, ledger, fromWire)
		}
		if r.Unseen == "" {
			r.Disagreement = fmt.Sprintf("the wire's account says %s: %s", w.Status, w.Summary)
		}
		return r
	case byLedger:
		r := inv.judge(ledger)
		r.Account = AccountLedger
		if fromWire != nil && inv.unseen != nil {
			r.Unseen = inv.unseen(in, ledger, fromWire)
		}
		return r
	case byWire:
		r := inv.judge(fromWire)
		r.Account = AccountWire
		return r
	}
	if inv.id == OutcomesResolved && len(ledger.Calls) > 0 {
		r := inv.judge(ledger)
		r.Account = AccountHistory
		return r
	}
	return Result{ID: inv.id, Status: NotJudged, Summary: inv.nothing}
}

// unseenCancellations explains why the wire cannot judge side effects
// committed after a cancellation: it sees a stream close, not the server
// taking it as a cancellation, nor when the tool committed.
func unseenCancellations(_ Input, ledger, _ *Accounts) string {
	if !ledger.has(sideeffects.KindCallCancelled) {
		return ""
	}
	return fmt.Sprintf("the server saw %s cancelled (call_cancelled) and the wire sees only streams closing, never when a tool commits",
		count(ledger.kinds[sideeffects.KindCallCancelled], "call"))
}

// unseenEnds explains the forks the wire's account finds and the ledger's
// does not by the sessions the server ended with nobody on the wire to see
// it: the wire presumes a session live until it is seen to end (a DELETE
// answered, a 404, a close event), and a server that expires an idle
// session tells no one until someone asks.
func unseenEnds(_ Input, ledger, fromWire *Accounts) string {
	closedAt := map[string]int64{}
	for _, s := range ledger.Sessions {
		if end := endUS(s); end != math.MaxInt64 {
			closedAt[s.ID] = end
		}
	}
	var unseen []string
	for _, f := range fromWire.Forks {
		end, ok := closedAt[f.Live.ID]
		if !ok || end > f.New.OpenedUS || slices.ContainsFunc(ledger.Forks, func(g Fork) bool { return g.New.ID == f.New.ID }) {
			return "" // the ledger has it live too, or no record of its end: a real disagreement
		}
		unseen = append(unseen, fmt.Sprintf("session %s ended at %s by the ledger, never seen to end on the wire", f.Live.ID, seconds(end)))
	}
	if len(unseen) == 0 {
		return ""
	}
	return "the wire presumes a session live until it is seen to end: " + strings.Join(unseen, "; ")
}

// unseenUnchargedCalls explains the duplicate charges the wire's account
// finds and the ledger's does not by calls that never got to charge: the
// server was killed while they ran, or it saw them cancelled first.
func unseenUnchargedCalls(in Input, ledger, fromWire *Accounts) string {
	if why := unseenKilledCharges(in, ledger, fromWire); why != "" {
		return why
	}
	return unseenCancelledCharges(in, ledger, fromWire)
}

// unseenCancelledCharges explains the duplicate charges the wire's account
// finds and the ledger's does not by calls the server saw cancelled (at
// 2026-07-28, their stream closing) before they charged: the wire counts
// every call the server accepted as charged, as it cannot see whether a
// cancelled one stopped short of its commit, and the ledger says it did.
func unseenCancelledCharges(in Input, ledger, fromWire *Accounts) string {
	if len(ledger.Duplicates) > 0 || !ledger.has(sideeffects.KindCallCancelled) {
		return ""
	}
	charged, chargedCall := map[string]int{}, map[StreamKey]bool{}
	for _, r := range in.Ledger {
		if r.Kind == sideeffects.KindCharge {
			charged[r.OrderID]++
			chargedCall[StreamKey{Session: r.Session, RequestID: r.RequestID}] = true
		}
	}
	stopped := map[string]int{}
	for _, r := range in.Ledger {
		if r.Kind == sideeffects.KindCallCancelled && !chargedCall[StreamKey{Session: r.Session, RequestID: r.RequestID}] {
			stopped[r.OrderID]++
		}
	}
	var unseen []string
	for _, d := range fromWire.Duplicates {
		if charged[d.OrderID]+stopped[d.OrderID] < len(d.Charges) || stopped[d.OrderID] == 0 {
			return ""
		}
		unseen = append(unseen, fmt.Sprintf("order %s: %d calls accepted at the server, %d charged by the ledger, %d cancelled before charging",
			d.OrderID, len(d.Charges), charged[d.OrderID], stopped[d.OrderID]))
	}
	if len(unseen) == 0 {
		return ""
	}
	return "the wire presumes every accepted call charged, and the server saw calls cancelled (call_cancelled) before they charged: " +
		strings.Join(unseen, "; ")
}

// unseenDrops explains the orphaned results the ledger's account finds
// and the wire's does not by results the server dropped (result_dropped:
// no session, or at 2026-07-28 no stream, to write them to): nothing of a
// dropped result crosses the wire, so the wire cannot count it unread.
func unseenDrops(_ Input, ledger, fromWire *Accounts) string {
	silent := 0
	for _, o := range ledger.Orphaned {
		if o.Surfaced {
			continue
		}
		if !o.Dropped {
			return "" // a result written and never read: the wire should see it too
		}
		silent++
	}
	for _, o := range fromWire.Orphaned {
		if !o.Surfaced {
			return ""
		}
	}
	if silent == 0 {
		return ""
	}
	return fmt.Sprintf("the server dropped %s it had nowhere to write (result_dropped), and nothing of a dropped result crosses the wire",
		count(silent, "result"))
}

// unseenKilledCharges explains the duplicate charges the wire's account
// finds and the ledger's does not by a server (or replica) killed while a
// call ran: the wire counts every call the server accepted as charged, as
// it cannot see whether one that never answered got as far as charging
// before its process died, and the ledger says it did not.
func unseenKilledCharges(in Input, ledger, fromWire *Accounts) string {
	kills := serverKills(in.Faults)
	if len(kills) == 0 || len(ledger.Duplicates) > 0 {
		return ""
	}
	charged := map[string]int{}
	for _, r := range in.Ledger {
		if r.Kind == sideeffects.KindCharge {
			charged[r.OrderID]++
		}
	}
	var unseen []string
	for _, d := range fromWire.Duplicates {
		if charged[d.OrderID] >= len(d.Charges) {
			return ""
		}
		unseen = append(unseen, fmt.Sprintf("order %s: %d calls accepted at the server, %d charged by the ledger",
			d.OrderID, len(d.Charges), charged[d.OrderID]))
	}
	if len(unseen) == 0 {
		return ""
	}
	at := make([]string, len(kills))
	for i, k := range kills {
		at[i] = seconds(k)
	}
	return fmt.Sprintf("the wire presumes every accepted call charged, and the server was killed at %s with calls running: %s",
		strings.Join(at, ", "), strings.Join(unseen, "; "))
}

// serverKills is when the fault log restarted or crashed the server (or one
// of its replicas, "server-2"), on the run's clock.
func serverKills(entries []faults.Entry) []int64 {
	var out []int64
	for _, e := range entries {
		server := e.Target == "server" || strings.HasPrefix(e.Target, "server-")
		if (e.Kind == faults.KindRestart || e.Kind == faults.KindCrash) && server && e.Error == "" {
			out = append(out, e.StartUS)
		}
	}
	return out
}

package check

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
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
	// ClientExit is how a client of the user's own ended (client-exit.json),
	// nil for chaosrun's own clients, whose history records their stops.
	ClientExit *ClientExit

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
	// AccountExit is the exit record of a client of the user's own
	// (client-exit.json): client_survived.
	AccountExit = "exit"
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
	}, "no side effect or call recorded: neither the ledger nor the wire shows a tool invoked", nil},
	{NoSilentEventLoss, noSilentLoss, func(a *Accounts) bool { return a.has(sideeffects.KindEventEmitted) },
		"no event emitted: neither the ledger nor the wire shows a progress event", nil},
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

// Judged is what [Judge] judges: the history (the client's own, or the one
// derived from the wire's client edge), the ledger's account, and the
// wire's when the run recorded the wire.
type Judged struct {
	History []history.Record
	// Own says History is the client's own record.
	Own    bool
	Ledger Accounts
	// Wire is the account of the ledger derived from the wire's server
	// edge (WireRecords), nil without a wire record.
	Wire        *Accounts
	WireRecords []sideeffects.Record
	lines       historyLines
	derived     *derivedHistory
	wire        *wireLedger
}

// Prepare builds the accounts [Judge] judges, once, for a caller that draws
// them (the timeline).
func Prepare(in Input) Judged {
	j := Judged{History: in.History, Own: len(in.History) > 0}
	var undistinguished map[string]bool
	if !j.Own && len(in.Wire) > 0 {
		j.derived = deriveHistory(in.Wire, in.Ops)
		j.History, j.lines = j.derived.out, j.derived.lines
		undistinguished = j.derived.undistinguished
	}
	j.Ledger = account(in.Ledger, j.History, accountOpts{ops: in.Ops, own: j.Own, undistinguished: undistinguished})
	j.Ledger.lines = j.lines
	if len(in.Wire) == 0 {
		return j
	}
	var named map[StreamKey]string
	if j.Own {
		named = namedOrders(in.History)
	}
	j.wire = ledgerFromWire(in.Wire, in.Ops, in.Faults, named)
	j.WireRecords = j.wire.records
	w := account(j.wire.records, place(j.History, j.wire.keys),
		accountOpts{ops: in.Ops, own: j.Own, wire: j.wire, undistinguished: undistinguished})
	w.Source, w.lines = SourceWire, j.lines
	j.Wire = &w
	return j
}

// primary is the account figures and assumptions read: the ledger's, or
// the wire's when the server wrote no ledger.
func (j *Judged) primary(in Input) *Accounts {
	if len(in.Ledger) == 0 && j.Wire != nil {
		return j.Wire
	}
	return &j.Ledger
}

// Judge checks the assumptions and every invariant, and computes the
// figures. A run whose client wrote no history (a client of the user's
// own) is judged on the history derived from the wire's client edge (see
// tohistory.go), and its evidence names wire records.
//
// Each invariant is judged on every account that holds something for it:
// the ledger's, and the one derived from the wire when a wire record
// exists. One that neither holds anything for is not judged, never held.
// When both judge it, the ledger's result stands and a disagreement of the
// wire's is reported with it (a defect of one account or the other, to be
// fixed, not averaged away); where the wire cannot tell what the ledger
// shows, that is said as a limit of the wire, not a disagreement.
//
// The verdict is workload_error when the workload could not run at all
// (see workloadRan); else it is inconclusive when the fault_hit
// assumption does not hold, whatever the invariants say (they are still
// reported), or when no invariant was proven held or violated; otherwise
// it is fail when some invariant is violated and pass when none is. A pass
// rests on the invariants proven held (RestsOn); those the records cannot
// tell are listed apart (CannotTell) and never count towards it. Figures
// come from the ledger's account, or the wire's when the ledger holds
// nothing, with what each is (Provenance).
func Judge(in Input) Verdict {
	j := Prepare(in)
	primary := j.primary(in)
	order := timeOrder(j.History)
	hin := in
	hin.History = j.History
	v := Verdict{
		Violations: []string{}, RestsOn: []string{}, CannotTell: []string{},
		Assumptions: []Result{workloadRan(hin, primary.Calls, j.lines), faultHit(hin, order, primary.Calls, j.lines)},
		Figures:     figures(hin, order, primary),
		ClientExit:  in.ClientExit,
	}
	v.Provenance = provenanceOf(hin, &j, primary)
	for _, inv := range invariants {
		v.Invariants = append(v.Invariants, judgeOn(in, inv, &j.Ledger, j.Wire))
	}
	v.Invariants = append(v.Invariants, clientSurvived(in))
	for _, r := range v.Invariants {
		switch r.Status {
		case Violated:
			v.Violations = append(v.Violations, r.ID)
			v.RestsOn = append(v.RestsOn, r.ID)
		case Held:
			v.RestsOn = append(v.RestsOn, r.ID)
		case CannotTell:
			v.CannotTell = append(v.CannotTell, r.ID)
		}
	}
	switch {
	case !v.Assumptions[0].Held():
		v.Verdict = WorkloadError
	case !v.Assumptions[1].Held() || len(v.RestsOn) == 0:
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
// fromwire.go): records of Source "wire" whose N is the wire record they
// come from. It is nil when in has no wire record.
func WireLedger(in Input) []sideeffects.Record {
	return Prepare(in).WireRecords
}

// judgeOn judges one invariant on the accounts able to, as [Judge] says.
func judgeOn(in Input, inv invariant, ledger, fromWire *Accounts) Result {
	byLedger := inv.able(ledger)
	byWire := fromWire != nil && inv.able(fromWire)
	switch {
	case byLedger && byWire:
		r, w := inv.judge(ledger), inv.judge(fromWire)
		r.Account = AccountBoth
		switch {
		case r.Status == w.Status:
			return r
		case w.Status == CannotTell:
			r.Unseen = "the wire alone cannot tell: " + w.Summary
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

// serverKills is when the fault log stopped the server (or one of its
// replicas, "server-2"): a crash or a restart, on the run's clock.
func serverKills(entries []faults.Entry) []int64 {
	var out []int64
	for _, e := range entries {
		if x := faults.EffectOf(e); x.Stops && x.Server() {
			out = append(out, e.StartUS)
		}
	}
	return out
}

// restartWindows is when the fault log stopped the server or one of its
// replicas and started it again, as [start, end] on the run's clock.
func restartWindows(entries []faults.Entry) [][2]int64 {
	var out [][2]int64
	for _, e := range entries {
		if x := faults.EffectOf(e); x.Stops && x.Server() {
			out = append(out, [2]int64{e.StartUS, max(e.EndUS, e.StartUS)})
		}
	}
	return out
}

// directKills is when the fault log killed (SIGKILL) the one server process
// that the proxy's server edge connects to: none when a balancer stands
// between them, since a connection to the balancer outlives any one
// replica.
func directKills(entries []faults.Entry) []int64 {
	var out []int64
	for _, e := range entries {
		x := faults.EffectOf(e)
		if x.Fronts {
			return nil
		}
		if x.Kills && x.Process == "server" {
			out = append(out, e.StartUS)
		}
	}
	return out
}

package check

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// Accounts is the ledger read against the clients' history: what the system
// under test did, next to what its clients saw. [Account] computes it;
// [Judge] turns it into invariants and figures.
//
// Ledger references are record numbers (N). History references are lines:
// the 1-based position of a record in the history slice, which is its line
// in history.jsonl when the file has no blank lines.
type Accounts struct {
	// Source names the ledger the accounts read: "" for the server's own,
	// [SourceWire] for one derived from the wire's server edge.
	Source string
	// Own says the history is the client's own record; otherwise it was
	// derived from the wire's client edge.
	Own       bool
	wire      *wireLedger // what the wire proves of a derived ledger; nil for the server's own
	Charges   int         // charge records (on the wire, invocations known to have taken effect)
	Uncertain int         // a derived ledger's charges the wire cannot establish
	// UncertainExtra counts those of them that would be duplicates if they
	// took effect: on orders charged, for certain or not, more than once.
	UncertainExtra int
	Duplicates     []OrderCharges // orders charged more than once, by order id
	// Undistinguished are orders invoked more than once that only their
	// arguments tell apart: each may be a new call as well as a retry.
	Undistinguished []OrderCharges
	// Possible are orders charged at most once for certain, and more than
	// once if charges the wire cannot establish took effect (see
	// fromwire.go: an error answer, a killed server, a cancelled stream).
	Possible      []PossibleCharges
	Events        EventCounts     // totals over Streams
	DerivedEvents EventCounts     // of those, the events derived from ids, not carried
	Streams       []StreamAccount // streams with an emitted event, by session, then request id
	Sessions      []SessionSpan   // by N of session_opened
	Forks         []Fork          // in the order the forking sessions opened
	// NameForks are forks among sessions whose client is known only by the
	// name it gave in initialize (no history of the client's own claims
	// them): two processes, or two workers, may share one name.
	NameForks []Fork
	// StoppedForks are forks the wire cannot prove: the server was stopped
	// (crashed or restarted) after the earlier session was last seen
	// alive and before the new one opened, so the earlier may have died
	// with it (sessions kept in memory) or not (a durable store).
	StoppedForks []StoppedFork
	Results      int                      // streams with a result written
	Orphaned     []Orphan                 // results nobody read, by N
	Calls        []Call                   // in the order of their first invoke
	kinds        map[sideeffects.Kind]int // ledger records read, by kind
	lines        historyLines             // how evidence names the history's lines
	BlindRetries []BlindRetry             // in time order
	// PossibleRetries are invokes that would be blind retries if the
	// orders they repeat were one operation, which only their arguments
	// say.
	PossibleRetries []BlindRetry
	FalseFails      []FalseFail // calls reported failed whose side effect was committed
	// CancelledCommits are side effects committed after the server saw
	// their call cancelled, by N of the commit.
	CancelledCommits []CancelledCommit
	// TaskFetches counts, per task (tasks extension; its records' stream
	// is "task:<id>"), the times the server handed out its result
	// (result_written): 1 is delivery exactly once, 0 a result never
	// fetched.
	TaskFetches map[string]int
}

// receivedAfter reports whether the client received an event or the
// result of a stream after us, with no gap surfaced on it.
func (a *Accounts) receivedAfter(key StreamKey, us int64) bool {
	for _, s := range a.Streams {
		if s.StreamKey == key {
			return s.LastUS > us && !s.Gapped
		}
	}
	return false
}

// has reports whether the ledger read held a record of one of the kinds.
func (a *Accounts) has(kinds ...sideeffects.Kind) bool {
	for _, k := range kinds {
		if a.kinds[k] > 0 {
			return true
		}
	}
	return false
}

// dropped is how many results the server dropped and nobody wrote.
func (a *Accounts) dropped() int {
	n := 0
	for _, o := range a.Orphaned {
		if o.Dropped {
			n++
		}
	}
	return n
}

// DuplicateCharges is how many charges exceed one per order.
func (a *Accounts) DuplicateCharges() int { return a.DuplicateChargesOf(a.Duplicates) }

// DuplicateChargesOf is how many charges of orders exceed one per order.
func (a *Accounts) DuplicateChargesOf(orders []OrderCharges) int {
	n := 0
	for _, d := range orders {
		n += len(d.Charges) - 1
	}
	return n
}

// OrderCharges is one order with the ledger records that charged it;
// [Accounts] lists the orders charged more than once.
type OrderCharges struct {
	OrderID string
	Charges []int64 // N of each charge record, ascending
}

// PossibleCharges is an order charged once or not at all for certain, with
// the invocations whose effect the wire cannot establish and why.
type PossibleCharges struct {
	OrderID   string
	Charges   []int64  // N of each certain charge
	Uncertain []int64  // N of each uncertain one
	Why       []string // why each uncertain one is, in order
}

// StreamKey names a call stream: the response stream of one request in one
// session, resumed by GET with Last-Event-ID.
type StreamKey struct {
	Session   string
	RequestID string
}

// EventCounts splits the events emitted on streams. Every emitted event is
// exactly one of: received; lost inside a gap the client surfaced; lost
// silently (missing, outside every surfaced gap, and positioned before
// something the client later received on the stream, or before the stream's
// result it received); or unread (after the client's last observation of a
// stream it abandoned). Emitted = Received + LostSilent + LostSurfaced + Unread.
type EventCounts struct {
	Emitted      int
	Received     int
	LostSilent   int
	LostSurfaced int
	Unread       int
}

func (c *EventCounts) add(o EventCounts) {
	c.Emitted += o.Emitted
	c.Received += o.Received
	c.LostSilent += o.LostSilent
	c.LostSurfaced += o.LostSurfaced
	c.Unread += o.Unread
}

// StreamAccount is the account of one call stream. Events are matched by
// (session, request id, seq); ledger event_emitted and history event
// records with seq 0 (priming and other unnumbered events) are not counted.
type StreamAccount struct {
	StreamKey
	EventCounts
	Silent     []EmittedEvent // the events lost silently, by seq
	Derived    EventCounts    // the events derived from ids, by how they were settled
	Gaps       []int          // lines of the surfaced gaps that held lost events
	Later      int            // line of the client's furthest observation of the stream; 0 if none
	ResultRead bool           // the client received the stream's result (ok, or fail with an event id)
	// LastUS is when the client last received an event of the stream or
	// its result; Gapped says it surfaced a gap on the stream or its
	// session.
	LastUS int64
	Gapped bool
}

// EmittedEvent is one emitted event: its ledger record, event id and seq.
type EmittedEvent struct {
	N       int64
	EventID int64
	Seq     int64
	// Derived marks an event no wire record shows, derived from the ids a
	// resumed stream skipped (see wireevents.go).
	Derived bool
}

// SessionSpan is the life of one server session, from the ledger: who
// opened it and when, when it closed, and when a client learned it was gone.
type SessionSpan struct {
	ID       string
	Client   string
	Opened   int64 // N of session_opened
	OpenedUS int64
	Closed   int64 // N of the first session_closed; 0 if live at the end of the run
	ClosedUS int64
	// LostUS is when a client was told the session is gone (a 404 or a
	// close event, history session_lost), 0 if never: a server that
	// crashed or restarted without a durable store writes no session_closed,
	// and its sessions end when it dies, which a client learns no later
	// than this.
	LostUS int64
	// Claimed is whether the client's history ever names the session: a
	// client holds a session only once it learned its id. A session whose
	// initialize answer was lost on the way is opened on the server but
	// never held.
	Claimed bool
}

// StoppedFork is a fork in doubt, and when the server was stopped.
type StoppedFork struct {
	Fork
	StoppedUS int64
}

// inDoubt splits forks read from the wire into those it proves and those
// a server stop leaves in doubt (see Accounts.StoppedForks). Of an account
// that is not the wire's, every fork is proven.
func (w *wireLedger) inDoubt(all []Fork) (proven []Fork, doubt []StoppedFork) {
	for _, f := range all {
		if w != nil {
			if k := w.stoppedBetween(f.Live.ID, f.Live.OpenedUS, f.New.OpenedUS); k >= 0 {
				doubt = append(doubt, StoppedFork{Fork: f, StoppedUS: k})
				continue
			}
		}
		proven = append(proven, f)
	}
	return proven, doubt
}

// Fork is a session opened for a logical client while another session of
// the same client was still live, both of them held (claimed) by it.
type Fork struct {
	Client string
	Live   SessionSpan
	New    SessionSpan
}

// Orphan is a result the server wrote to a stream that no client outcome
// ever read. An outcome (ok, fail or unknown) with the same session and
// request id reads it when it carries the result's event id, or when it
// was read from the call's response (history result "read") at or after
// the result was written: a response may come as plain JSON, and an SDK
// server's ledger knows no event ids. An outcome the client reached by
// giving up reads nothing, whenever it was recorded. Surfaced marks an orphan whose stream the client concluded as
// an unknown outcome: the client cannot have read the result, but it told
// its caller so instead of assuming (a surfaced gap, for a result).
type Orphan struct {
	StreamKey
	N        int64 // of the result_written or result_dropped record
	EventID  int64
	Surfaced bool
	// Dropped marks a result the server never wrote anywhere, its session
	// being gone when the call finished (result_dropped): no client could
	// ever read it.
	Dropped bool
	// Derived says what a result no wire record shows was derived from
	// (see fromwire.go); "" for a recorded one.
	Derived string
	// Abandoned marks a result of a call its client cancelled
	// (notifications/cancelled) and so never read, whatever reached it.
	Abandoned bool
}

// Call is one logical call of one client, over all its attempts.
type Call struct {
	Client  string
	ID      string
	OrderID string
	Tool    string
	Invokes int   // attempts
	First   int   // line of the first invoke
	StartUS int64 // time of the first invoke
	// Outcome is the kind of the last outcome (ok, fail or unknown) that
	// follows the call's last invoke; empty when no outcome does, which
	// leaves the call unresolved.
	Outcome history.Kind
	Last    int   // line of that outcome, or of the last invoke when unresolved
	EndUS   int64 // time of the outcome; 0 when unresolved
}

// Resolved reports whether the call's last attempt ended ok, fail or unknown.
func (c Call) Resolved() bool { return c.Outcome != "" }

// BlindRetry is an invoke of a non-idempotent order while an earlier
// attempt of it may have taken effect: the client had concluded that
// attempt's outcome unknown, or the attempt had reached the server (its
// call_started is in the ledger) and the client never read its outcome. A
// retry like that risks the side effect twice whether or not it happened.
type BlindRetry struct {
	Client  string
	Call    string
	OrderID string
	// Unknown is the line of the unknown outcome that preceded the retry,
	// 0 when the retry followed an attempt that reached the server.
	Unknown int
	// Prior is the line of the earlier attempt's invoke and Started the N
	// of its call_started, when the retry followed an attempt that reached
	// the server.
	Prior   int
	Started int64
	Invoke  int // line of the retry
}

// FalseFail is a call whose client reported it failed although its side
// effect was committed: its caller, told it failed, will try again by hand.
type FalseFail struct {
	Client  string
	Call    string
	OrderID string
	Line    int     // line of the fail outcome
	Commits []int64 // N of the records that committed the side effect
}

// Account reads the ledger against the history: it counts charges and the
// orders charged more than once, settles every emitted event of every stream
// as received, lost inside a surfaced gap, lost silently or unread (see
// [EventCounts]), lists the sessions and the forks among them, the results
// no outcome read, and follows every call through its attempts to its
// outcome, noting each blind retry of a non-idempotent order after an
// unknown outcome. A charge is non-idempotent unless a ledger charge record
// of its order carries an idempotency key; other tools are idempotent. Time
// order in the history is t_us, then line. Account is a pure function of its
// inputs and modifies neither.
func Account(ledger []sideeffects.Record, hist []history.Record, ops Ops) Accounts {
	return account(ledger, hist, accountOpts{ops: ops, own: true})
}

// accountOpts is what an account knows besides its records.
type accountOpts struct {
	ops Ops
	// own says the history is the client's own record, which proves who
	// held each session it names.
	own bool
	// wire is what the wire proves of a ledger derived from it.
	wire *wireLedger
	// undistinguished names the orders of a derived history that only
	// their arguments tell apart.
	undistinguished map[string]bool
}

func account(ledger []sideeffects.Record, hist []history.Record, o accountOpts) Accounts {
	a := newAccountant(o.ops)
	a.opts = o
	kinds := map[sideeffects.Kind]int{}
	for i := range ledger {
		a.ledgerRecord(&ledger[i])
		kinds[ledger[i].Kind]++
	}
	for i := range hist {
		a.historyRecord(i+1, &hist[i])
	}
	out := Accounts{Charges: a.charges, Results: len(a.results), kinds: kinds, Own: o.own, wire: o.wire}
	for order, ms := range a.maybe {
		out.Uncertain += len(ms)
		if len(a.byOrder[order])+len(ms) >= 2 {
			out.UncertainExtra += min(len(ms), len(a.byOrder[order])+len(ms)-1)
		}
	}
	out.Duplicates, out.Undistinguished, out.Possible = a.duplicates()
	out.Streams, out.Events, out.DerivedEvents = a.streamAccounts()
	out.Sessions = a.sessionList()
	if o.own {
		out.Forks, out.StoppedForks = o.wire.inDoubt(forks(out.Sessions))
	} else {
		out.NameForks, out.StoppedForks = o.wire.inDoubt(forks(out.Sessions))
	}
	out.Orphaned = a.orphans()
	out.Calls, out.BlindRetries = a.callAccounts(hist)
	out.BlindRetries, out.PossibleRetries = a.splitRetries(out.BlindRetries)
	out.FalseFails = a.falseFails(out.Calls)
	out.CancelledCommits = a.cancelledCommits(out.Calls)
	out.TaskFetches = a.taskFetches
	return out
}

// accountant gathers what Account needs in one pass over each input.
type accountant struct {
	ops       Ops
	opts      accountOpts
	maybe     map[string][]maybeRef // order id to its uncertain charges (a derived ledger's)
	started   map[StreamKey]int64   // N of each attempt's call_started
	committed map[string][]int64    // order id to the records that committed its side effect
	dropped   map[StreamKey]int64   // N of each result_dropped
	charges   int
	byOrder   map[string][]int64
	keyed     map[string]bool   // orders charged under an idempotency key
	toolOf    map[string]string // order id to tool, from call_started
	streams   map[StreamKey]*streamState
	sessGaps  map[string][]gapRef // gaps surfaced for a whole session
	opened    map[string]SessionSpan
	closed    map[string]sideeffects.Record
	results   map[StreamKey]writtenRef
	outcomes  map[StreamKey][]outcomeRef // every ok, fail and unknown of a stream
	claimed   map[string]bool            // sessions some history record names
	claimedBy map[string]string          // sessions to the client whose session_new names them
	lostAt    map[string]int64           // sessions a client was told are gone, and when
	// cancelled, commits and deduplicated follow side effects committed
	// after a cancellation (see cancelled.go).
	cancelled    map[StreamKey]cancelRef
	commits      map[StreamKey][]cancelRef
	deduplicated map[string][]int64 // order id to N of its charge_deduplicated
	taskFetches  map[string]int     // task stream to result_written records on it
}

// outcomeRef is when an outcome was recorded, the event id it read, and
// whether it was an unknown.
type outcomeRef struct {
	tus, eventID  int64
	unknown, read bool
	abandoned     bool // the client cancelled the call (result cancelled)
}

type streamState struct {
	emitted    []EmittedEvent
	received   []int64    // seqs
	numbered   [][2]int64 // (event id, seq) of received events that have both
	maxEventID int64
	maxSeq     int64
	lastUS     int64
	later      int
	resultRead bool
	gaps       []gapRef
}

// maybeRef is a charge the wire cannot establish, and why.
type maybeRef struct {
	n   int64
	why string
}

// writtenRef is the first result_written record of a stream.
type writtenRef struct {
	n, eventID, tus int64
	derived         string
}

// derived says what a record of a ledger derived from the wire was derived
// from, when no wire record shows it; "" otherwise.
func (a *accountant) derived(r *sideeffects.Record) string {
	if a.opts.wire == nil {
		return ""
	}
	return a.opts.wire.derived[r.ID]
}

type gapRef struct {
	from, to int64
	line     int
}

func newAccountant(ops Ops) *accountant {
	return &accountant{
		ops:       ops,
		maybe:     map[string][]maybeRef{},
		claimedBy: map[string]string{},
		started:   map[StreamKey]int64{},
		committed: map[string][]int64{},
		cancelled: map[StreamKey]cancelRef{}, commits: map[StreamKey][]cancelRef{}, deduplicated: map[string][]int64{},
		taskFetches: map[string]int{},
		dropped:     map[StreamKey]int64{},
		byOrder:     map[string][]int64{},
		keyed:       map[string]bool{},
		toolOf:      map[string]string{},
		streams:     map[StreamKey]*streamState{},
		sessGaps:    map[string][]gapRef{},
		opened:      map[string]SessionSpan{},
		closed:      map[string]sideeffects.Record{},
		results:     map[StreamKey]writtenRef{},
		outcomes:    map[StreamKey][]outcomeRef{},
		claimed:     map[string]bool{},
		lostAt:      map[string]int64{},
	}
}

func (a *accountant) stream(k StreamKey) *streamState {
	s := a.streams[k]
	if s == nil {
		s = &streamState{}
		a.streams[k] = s
	}
	return s
}

func (a *accountant) ledgerRecord(r *sideeffects.Record) {
	a.cancelRecord(r)
	if _, seen := a.taskFetches[r.Stream]; !seen && strings.HasPrefix(r.Stream, "task:") {
		a.taskFetches[r.Stream] = 0 // a task, fetched or not
	}
	key := StreamKey{Session: r.Session, RequestID: r.RequestID}
	switch r.Kind {
	case sideeffects.KindCharge:
		if a.opts.wire != nil && a.opts.wire.uncertain[r.ID] != "" {
			a.maybe[r.OrderID] = append(a.maybe[r.OrderID], maybeRef{n: r.N, why: a.opts.wire.uncertain[r.ID]})
			a.keyed[r.OrderID] = a.keyed[r.OrderID] || r.IdempotencyKey != ""
			return
		}
		a.charges++
		a.byOrder[r.OrderID] = append(a.byOrder[r.OrderID], r.N)
		a.keyed[r.OrderID] = a.keyed[r.OrderID] || r.IdempotencyKey != ""
		if r.Source != SourceWire { // a derived charge is an invocation, not a commit
			a.committed[r.OrderID] = append(a.committed[r.OrderID], r.N)
		}
	case sideeffects.KindChargeDeduplicated:
		a.keyed[r.OrderID] = a.keyed[r.OrderID] || r.IdempotencyKey != ""
	case sideeffects.KindCallStarted:
		a.keyed[r.OrderID] = a.keyed[r.OrderID] || r.IdempotencyKey != "" // the wire's, from the arguments
		if r.OrderID != "" && r.Tool != "" {
			a.toolOf[r.OrderID] = r.Tool
		}
		if _, seen := a.started[key]; !seen {
			a.started[key] = r.N
		}
	case sideeffects.KindEventEmitted:
		if r.Seq > 0 {
			s := a.stream(key)
			s.emitted = append(s.emitted, EmittedEvent{N: r.N, EventID: r.EventID, Seq: r.Seq, Derived: a.derived(r) != ""})
		}
	case sideeffects.KindResultWritten:
		if strings.HasPrefix(r.Stream, "task:") {
			a.taskFetches[r.Stream]++
		}
		if w, seen := a.results[key]; !seen || r.N < w.n {
			a.results[key] = writtenRef{n: r.N, eventID: r.EventID, tus: r.TUS, derived: a.derived(r)}
		}
		// The wire sees no money move, but a result the server sent says
		// the operation ran to its end.
		if r.Source == SourceWire && a.derived(r) == "" && !r.IsError && r.OrderID != "" {
			a.committed[r.OrderID] = append(a.committed[r.OrderID], r.N)
		}
	case sideeffects.KindResultDropped:
		if _, seen := a.dropped[key]; !seen {
			a.dropped[key] = r.N
		}
	case sideeffects.KindSessionOpened:
		if o, seen := a.opened[r.Session]; !seen || r.N < o.Opened {
			a.opened[r.Session] = SessionSpan{ID: r.Session, Client: r.Client, Opened: r.N, OpenedUS: r.TUS}
		}
	case sideeffects.KindSessionClosed:
		if c, seen := a.closed[r.Session]; !seen || r.N < c.N {
			a.closed[r.Session] = *r
		}
	}
}

func (a *accountant) historyRecord(line int, h *history.Record) {
	key := StreamKey{Session: h.Session, RequestID: h.RequestID}
	if h.Session != "" {
		a.claimed[h.Session] = true
	}
	switch h.Kind {
	case history.KindSessionNew:
		if _, seen := a.claimedBy[h.Session]; !seen && h.Session != "" {
			a.claimedBy[h.Session] = h.Client
		}
	case history.KindSessionLost:
		if h.Reason == "status_404" || h.Reason == "close_event" {
			if t, seen := a.lostAt[h.Session]; !seen || h.TUS < t {
				a.lostAt[h.Session] = h.TUS
			}
		}
	case history.KindEvent:
		if h.Seq <= 0 {
			return
		}
		s := a.stream(key)
		s.received = append(s.received, h.Seq)
		if h.EventID > 0 {
			s.numbered = append(s.numbered, [2]int64{h.EventID, h.Seq})
		}
		if (h.EventID > s.maxEventID || h.Seq > s.maxSeq) && !s.resultRead {
			s.later = line
		}
		s.maxSeq = max(s.maxSeq, h.Seq)
		s.maxEventID = max(s.maxEventID, h.EventID)
		s.lastUS = max(s.lastUS, h.TUS)
	case history.KindOK, history.KindFail:
		a.outcomes[key] = append(a.outcomes[key], outcomeRef{tus: h.TUS, eventID: h.EventID, read: h.Result == history.ResultRead,
			abandoned: h.Result == history.ResultCancelled})
		if h.Kind == history.KindOK || h.EventID > 0 {
			s := a.stream(key)
			s.maxEventID = max(s.maxEventID, h.EventID)
			s.resultRead, s.later = true, line
			s.lastUS = max(s.lastUS, h.TUS)
		}
	case history.KindUnknown:
		a.outcomes[key] = append(a.outcomes[key], outcomeRef{tus: h.TUS, eventID: h.EventID, unknown: true, read: h.Result == history.ResultRead})
	case history.KindGap:
		g := gapRef{from: h.FromEventID, to: h.ToEventID, line: line}
		if g.to == 0 { // open-ended: no head was named
			g.to = math.MaxInt64
		}
		if h.RequestID == "" {
			a.sessGaps[h.Session] = append(a.sessGaps[h.Session], g)
		} else {
			s := a.stream(key)
			s.gaps = append(s.gaps, g)
		}
	}
}

// duplicates lists the orders charged more than once, those of them only
// their arguments tell apart, and the orders whose uncertain charges may
// make them duplicates.
func (a *accountant) duplicates() (dups, undistinguished []OrderCharges, possible []PossibleCharges) {
	for order, ns := range a.byOrder {
		if len(ns) < 2 {
			continue
		}
		oc := OrderCharges{OrderID: order, Charges: slices.Sorted(slices.Values(ns))}
		if a.unproven(order) {
			undistinguished = append(undistinguished, oc)
		} else {
			dups = append(dups, oc)
		}
	}
	for order, ns := range a.maybe {
		if len(a.byOrder[order]) >= 2 || len(a.byOrder[order])+len(ns) < 2 {
			continue
		}
		p := PossibleCharges{OrderID: order, Charges: slices.Sorted(slices.Values(a.byOrder[order]))}
		for _, m := range ns {
			p.Uncertain, p.Why = append(p.Uncertain, m.n), append(p.Why, m.why)
		}
		possible = append(possible, p)
	}
	byID := func(x, y OrderCharges) int { return cmp.Compare(x.OrderID, y.OrderID) }
	slices.SortFunc(dups, byID)
	slices.SortFunc(undistinguished, byID)
	slices.SortFunc(possible, func(x, y PossibleCharges) int { return cmp.Compare(x.OrderID, y.OrderID) })
	return dups, undistinguished, possible
}

// unproven reports whether only its arguments tell an order apart.
func (a *accountant) unproven(order string) bool {
	return a.opts.undistinguished[order] || a.opts.wire != nil && a.opts.wire.unproven[order]
}

// splitRetries separates the blind retries of orders that only their
// arguments tell apart: each may as well have been a call of its own.
func (a *accountant) splitRetries(all []BlindRetry) (proven, possible []BlindRetry) {
	for _, b := range all {
		if a.unproven(b.OrderID) {
			possible = append(possible, b)
		} else {
			proven = append(proven, b)
		}
	}
	return proven, possible
}

func (a *accountant) streamAccounts() ([]StreamAccount, EventCounts, EventCounts) {
	var out []StreamAccount
	var total, derived EventCounts
	for key, s := range a.streams {
		if len(s.emitted) == 0 {
			continue
		}
		st := s.settle(key, a.sessGaps[key.Session])
		total.add(st.EventCounts)
		derived.add(st.Derived)
		out = append(out, st)
	}
	slices.SortFunc(out, func(x, y StreamAccount) int {
		return cmp.Or(cmp.Compare(x.Session, y.Session), cmp.Compare(x.RequestID, y.RequestID))
	})
	return out, total, derived
}

// settle classifies every emitted event of the stream; see [EventCounts].
func (s *streamState) settle(key StreamKey, sessGaps []gapRef) StreamAccount {
	slices.SortFunc(s.emitted, func(x, y EmittedEvent) int { return cmp.Or(cmp.Compare(x.Seq, y.Seq), cmp.Compare(x.N, y.N)) })
	emitted := slices.CompactFunc(s.emitted, func(x, y EmittedEvent) bool { return x.Seq == y.Seq })
	slices.Sort(s.received)
	received := slices.Compact(s.received)
	out := StreamAccount{StreamKey: key, Later: s.later, ResultRead: s.resultRead, LastUS: s.lastUS, Gapped: len(s.gaps)+len(sessGaps) > 0}
	gapLines := map[int]bool{}
	j := 0
	for _, e := range emitted {
		for j < len(received) && received[j] < e.Seq {
			j++
		}
		g, inGap := coveringGap(e.EventID, s.gaps, sessGaps)
		if e.EventID == 0 {
			g, inGap = s.coveringGapBySeq(e.Seq, sessGaps)
		}
		c := EventCounts{Emitted: 1}
		switch {
		case j < len(received) && received[j] == e.Seq:
			c.Received = 1
		case inGap:
			c.LostSurfaced = 1
			gapLines[g] = true
		case s.resultRead || (e.EventID > 0 && e.EventID < s.maxEventID) || e.Seq < s.maxSeq:
			// An event the ledger knows no id of (an SDK server's) is
			// placed by its sequence number alone.
			c.LostSilent = 1
			out.Silent = append(out.Silent, e)
		default:
			c.Unread = 1
		}
		out.EventCounts.add(c)
		if e.Derived {
			out.Derived.add(c)
		}
	}
	out.Gaps = slices.Sorted(func(yield func(int) bool) {
		for l := range gapLines {
			if !yield(l) {
				return
			}
		}
	})
	return out
}

// coveringGapBySeq places an event the ledger knows no id of inside a
// surfaced gap (from, to] through the ids and sequence numbers of what the
// client received: it is inside when its sequence number lies after the
// last one received at or before from, and before the first one received
// after to.
func (s *streamState) coveringGapBySeq(seq int64, sessGaps []gapRef) (int, bool) {
	for _, gaps := range [][]gapRef{s.gaps, sessGaps} {
		for _, g := range gaps {
			lo, hi := int64(0), int64(math.MaxInt64)
			for _, p := range s.numbered {
				if p[0] <= g.from {
					lo = max(lo, p[1])
				} else if p[0] > g.to {
					hi = min(hi, p[1])
				}
			}
			if lo < seq && seq < hi {
				return g.line, true
			}
		}
	}
	return 0, false
}

// coveringGap returns the line of a surfaced gap (from, to] holding id.
func coveringGap(id int64, lists ...[]gapRef) (int, bool) {
	for _, gaps := range lists {
		for _, g := range gaps {
			if g.from < id && id <= g.to {
				return g.line, true
			}
		}
	}
	return 0, false
}

func (a *accountant) sessionList() []SessionSpan {
	out := make([]SessionSpan, 0, len(a.opened))
	for id, s := range a.opened {
		if c, ok := a.closed[id]; ok {
			s.Closed, s.ClosedUS = c.N, c.TUS
		}
		s.Claimed = a.claimed[id]
		if client, ok := a.claimedBy[id]; ok && a.opts.own && client != "" {
			s.Client = client // the client's own record says who held it
		}
		s.LostUS = a.lostAt[id]
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y SessionSpan) int { return cmp.Or(cmp.Compare(x.Opened, y.Opened), cmp.Compare(x.ID, y.ID)) })
	return out
}

// forks finds, per logical client, each session opened while an earlier
// session of the client was still live (closed strictly after the opening).
// Sessions without a client cannot be attributed, and sessions the client
// never learned of were never held by it: both are skipped.
func forks(sessions []SessionSpan) []Fork {
	byClient := map[string][]SessionSpan{}
	for _, s := range sessions {
		if s.Client != "" && s.Claimed {
			byClient[s.Client] = append(byClient[s.Client], s)
		}
	}
	var out []Fork
	for client, ss := range byClient {
		slices.SortStableFunc(ss, func(x, y SessionSpan) int {
			return cmp.Or(cmp.Compare(x.OpenedUS, y.OpenedUS), cmp.Compare(x.Opened, y.Opened))
		})
		var latest SessionSpan // the earlier session that stays live longest
		latestEnd := int64(math.MinInt64)
		for _, s := range ss {
			if s.OpenedUS < latestEnd {
				out = append(out, Fork{Client: client, Live: latest, New: s})
			}
			if end := endUS(s); end > latestEnd {
				latest, latestEnd = s, end
			}
		}
	}
	slices.SortFunc(out, func(x, y Fork) int {
		return cmp.Or(cmp.Compare(x.New.Opened, y.New.Opened), cmp.Compare(x.New.ID, y.New.ID), cmp.Compare(x.Live.ID, y.Live.ID))
	})
	return out
}

// endUS is when a session stopped being live: its session_closed, or the
// moment a client was told it was gone, whichever came first.
func endUS(s SessionSpan) int64 {
	end := int64(math.MaxInt64)
	if s.Closed != 0 {
		end = s.ClosedUS
	}
	if s.LostUS > 0 {
		end = min(end, s.LostUS)
	}
	return end
}

func (a *accountant) orphans() []Orphan {
	var out []Orphan
	for key, n := range a.dropped {
		if _, written := a.results[key]; written {
			continue
		}
		surfaced := slices.ContainsFunc(a.outcomes[key], func(o outcomeRef) bool { return o.unknown })
		out = append(out, Orphan{StreamKey: key, N: n, Surfaced: surfaced, Dropped: true})
	}
	for key, w := range a.results {
		read := slices.ContainsFunc(a.outcomes[key], func(o outcomeRef) bool {
			return (o.eventID != 0 && o.eventID == w.eventID) || (o.read && o.tus >= w.tus)
		})
		if !read {
			surfaced := slices.ContainsFunc(a.outcomes[key], func(o outcomeRef) bool { return o.unknown })
			abandoned := slices.ContainsFunc(a.outcomes[key], func(o outcomeRef) bool { return o.abandoned })
			out = append(out, Orphan{StreamKey: key, N: w.n, EventID: w.eventID, Surfaced: surfaced, Derived: w.derived, Abandoned: abandoned})
		}
	}
	slices.SortFunc(out, func(x, y Orphan) int {
		return cmp.Or(cmp.Compare(x.N, y.N), cmp.Compare(x.Session, y.Session), cmp.Compare(x.RequestID, y.RequestID))
	})
	return out
}

// nonIdempotent reports whether repeating an invoke of tool for order could
// repeat its side effect: the tool's op is not idempotent (a tool the
// workload names no op for is taken as not idempotent), and no record of
// the order carries an idempotency key.
func (a *accountant) nonIdempotent(tool, order string) bool {
	if tool == "" {
		tool = a.toolOf[order]
	}
	if a.keyed[order] {
		return false
	}
	op, ok := a.ops.find(tool)
	return !ok || !op.Idempotent
}

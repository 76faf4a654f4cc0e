package check

import "github.com/chaosrun/chaosrun/targets/history"

// Figures are the run's numbers, under the names expect.figures uses.
type Figures struct {
	Calls               int64 `json:"calls"`                // logical calls invoked (client, call id)
	CallsOK             int64 `json:"calls_ok"`             // whose last attempt ended ok
	CallsFailed         int64 `json:"calls_failed"`         // ... ended fail
	CallsUnknown        int64 `json:"calls_unknown"`        // ... ended unknown
	CallsUnresolved     int64 `json:"calls_unresolved"`     // ... never ended
	Charges             int64 `json:"charges"`              // ledger charge records
	Duplicates          int64 `json:"duplicates"`           // charges beyond one per order
	EventsEmitted       int64 `json:"events_emitted"`       // numbered events the server emitted
	EventsReceived      int64 `json:"events_received"`      // of those, received by the client
	EventsLostSilent    int64 `json:"events_lost_silent"`   // missing where the client assumed continuity
	EventsLostSurfaced  int64 `json:"events_lost_surfaced"` // missing inside a gap the client surfaced
	EventsUnread        int64 `json:"events_unread"`        // after the client's last look at an abandoned stream
	Sessions            int64 `json:"sessions"`             // sessions the server opened
	SessionsUnclaimed   int64 `json:"sessions_unclaimed"`   // ... that no client ever learned of
	Forks               int64 `json:"forks"`                // sessions opened while the client had another live (by client name alone: an upper bound)
	OrphanedResults     int64 `json:"orphaned_results"`     // results nobody read, with no unknown surfaced
	OrphanedSurfaced    int64 `json:"orphaned_surfaced"`    // results unread by calls surfaced as unknown
	Reconnects          int64 `json:"reconnects"`           // reconnect attempts in the history
	Resumes             int64 `json:"resumes"`              // successful resumes
	Gaps                int64 `json:"gaps"`                 // gaps the clients surfaced
	BlindRetries        int64 `json:"blind_retries"`        // non-idempotent retries after an unknown outcome
	CancelledCommits    int64 `json:"cancelled_commits"`    // side effects committed after their call was seen cancelled
	CancelledUnsurfaced int64 `json:"cancelled_unsurfaced"` // ... that the client did not account for
	Tasks               int64 `json:"tasks"`                // tasks the server ran (tasks extension)
	TaskResultsFetched  int64 `json:"task_results_fetched"` // times the server handed out a task's result
	WorstReconnectMS    int64 `json:"worst_reconnect_ms"`   // longest stream_break to resume or new session
	WallMS              int64 `json:"wall_ms"`              // how long the run took
	ScheduledMS         int64 `json:"scheduled_ms"`         // how long its schedule said it would take
}

// The kinds of [Provenance]: what a figure is.
const (
	// Observed: a count of recorded facts (ledger records, history lines,
	// wire records), each of which the record shows.
	Observed = "observed"
	// Derived: counted from facts the checker inferred from the wire by a
	// stated rule (a result a call that reached the server wrote although
	// it never crossed the edge; events whose ids a resumed stream skipped).
	Derived = "derived"
	// LowerBound: the true figure is at least this; the records may miss
	// some of what it counts.
	LowerBound = "lower_bound"
	// UpperBound: the true figure is at most this.
	UpperBound = "upper_bound"
	// Unknown: the records cannot give the figure; its value is what they
	// show, and proves nothing.
	Unknown = "cannot_tell"
)

// Provenance says what one figure is, and why when it is not observed.
type Provenance struct {
	Kind string `json:"kind"`
	Why  string `json:"why,omitempty"`
}

// provenance collects the figures that are not observed, by name.
type provenance map[string]Provenance

// note records what a figure is. A figure noted twice keeps the weaker
// claim: cannot_tell over a bound, a bound over derived; a lower and an
// upper bound together are cannot_tell.
func (p provenance) note(name, kind, why string) {
	old, seen := p[name]
	switch {
	case !seen || old.Kind == kind:
		if seen && old.Why != "" && old.Why != why {
			why = old.Why + "; " + why
		}
		p[name] = Provenance{Kind: kind, Why: why}
	case old.Kind == Unknown || kind == Derived:
	case kind == Unknown || old.Kind == Derived:
		p[name] = Provenance{Kind: kind, Why: why}
	default: // a lower and an upper bound
		p[name] = Provenance{Kind: Unknown, Why: old.Why + "; " + why}
	}
}

// figureTable maps each figure name to its field, in JSON order.
var figureTable = []struct {
	name string
	get  func(*Figures) int64
}{
	{"calls", func(f *Figures) int64 { return f.Calls }},
	{"calls_ok", func(f *Figures) int64 { return f.CallsOK }},
	{"calls_failed", func(f *Figures) int64 { return f.CallsFailed }},
	{"calls_unknown", func(f *Figures) int64 { return f.CallsUnknown }},
	{"calls_unresolved", func(f *Figures) int64 { return f.CallsUnresolved }},
	{"charges", func(f *Figures) int64 { return f.Charges }},
	{"duplicates", func(f *Figures) int64 { return f.Duplicates }},
	{"events_emitted", func(f *Figures) int64 { return f.EventsEmitted }},
	{"events_received", func(f *Figures) int64 { return f.EventsReceived }},
	{"events_lost_silent", func(f *Figures) int64 { return f.EventsLostSilent }},
	{"events_lost_surfaced", func(f *Figures) int64 { return f.EventsLostSurfaced }},
	{"events_unread", func(f *Figures) int64 { return f.EventsUnread }},
	{"sessions", func(f *Figures) int64 { return f.Sessions }},
	{"sessions_unclaimed", func(f *Figures) int64 { return f.SessionsUnclaimed }},
	{"forks", func(f *Figures) int64 { return f.Forks }},
	{"orphaned_results", func(f *Figures) int64 { return f.OrphanedResults }},
	{"orphaned_surfaced", func(f *Figures) int64 { return f.OrphanedSurfaced }},
	{"reconnects", func(f *Figures) int64 { return f.Reconnects }},
	{"resumes", func(f *Figures) int64 { return f.Resumes }},
	{"gaps", func(f *Figures) int64 { return f.Gaps }},
	{"blind_retries", func(f *Figures) int64 { return f.BlindRetries }},
	{"cancelled_commits", func(f *Figures) int64 { return f.CancelledCommits }},
	{"cancelled_unsurfaced", func(f *Figures) int64 { return f.CancelledUnsurfaced }},
	{"tasks", func(f *Figures) int64 { return f.Tasks }},
	{"task_results_fetched", func(f *Figures) int64 { return f.TaskResultsFetched }},
	{"worst_reconnect_ms", func(f *Figures) int64 { return f.WorstReconnectMS }},
	{"wall_ms", func(f *Figures) int64 { return f.WallMS }},
	{"scheduled_ms", func(f *Figures) int64 { return f.ScheduledMS }},
}

// FigureNames lists every figure name, in verdict.json order.
var FigureNames = figureNames()

func figureNames() []string {
	names := make([]string, len(figureTable))
	for i, f := range figureTable {
		names[i] = f.name
	}
	return names
}

// Value returns the figure with the given name.
func (f Figures) Value(name string) (int64, bool) {
	for _, e := range figureTable {
		if e.name == name {
			return e.get(&f), true
		}
	}
	return 0, false
}

// figures computes every figure from the accounts and the history, whose
// time order is order.
func figures(in Input, order []int, acc *Accounts) Figures {
	f := Figures{
		Calls:               int64(len(acc.Calls)),
		Charges:             int64(acc.Charges),
		Duplicates:          int64(acc.DuplicateCharges()),
		EventsEmitted:       int64(acc.Events.Emitted),
		EventsReceived:      int64(acc.Events.Received),
		EventsLostSilent:    int64(acc.Events.LostSilent),
		EventsLostSurfaced:  int64(acc.Events.LostSurfaced),
		EventsUnread:        int64(acc.Events.Unread),
		Sessions:            int64(len(acc.Sessions)),
		Forks:               int64(len(acc.Forks) + len(acc.NameForks) + len(acc.StoppedForks)),
		BlindRetries:        int64(len(acc.BlindRetries)),
		CancelledCommits:    int64(len(acc.CancelledCommits)),
		CancelledUnsurfaced: int64(unsurfacedCommits(acc.CancelledCommits)),
		Tasks:               int64(len(acc.TaskFetches)),
		TaskResultsFetched:  int64(fetches(acc.TaskFetches)),
		WallMS:              in.Wall.Milliseconds(),
		ScheduledMS:         in.Scheduled.Milliseconds(),
	}
	for _, s := range acc.Sessions {
		if !s.Claimed {
			f.SessionsUnclaimed++
		}
	}
	for _, o := range acc.Orphaned {
		switch {
		case o.Surfaced:
			f.OrphanedSurfaced++
		case acc.Own || o.Abandoned: // of a client judged from the wire, only what it abandoned is proven
			f.OrphanedResults++
		}
	}
	for _, c := range acc.Calls {
		switch c.Outcome {
		case history.KindOK:
			f.CallsOK++
		case history.KindFail:
			f.CallsFailed++
		case history.KindUnknown:
			f.CallsUnknown++
		default:
			f.CallsUnresolved++
		}
	}
	for i := range in.History {
		switch in.History[i].Kind {
		case history.KindReconnect:
			f.Reconnects++
		case history.KindResume:
			f.Resumes++
		case history.KindGap:
			f.Gaps++
		}
	}
	f.WorstReconnectMS = worstReconnect(in.History, order) / 1000
	return f
}

// worstReconnect returns, in microseconds, the longest time from a client's
// stream_break to its next successful resume, successful reconnect or new
// session. Breaks that never recovered are not counted.
func worstReconnect(hist []history.Record, order []int) int64 {
	brokeAt := map[string]int64{} // client to the time of its first unrecovered break
	var worst int64
	for _, i := range order {
		h := &hist[i]
		switch {
		case h.Kind == history.KindStreamBreak:
			if _, pending := brokeAt[h.Client]; !pending {
				brokeAt[h.Client] = h.TUS
			}
		case recovered(h):
			if t, pending := brokeAt[h.Client]; pending {
				worst = max(worst, h.TUS-t)
				delete(brokeAt, h.Client)
			}
		}
	}
	return worst
}

func recovered(h *history.Record) bool {
	switch h.Kind {
	case history.KindResume, history.KindSessionNew:
		return true
	case history.KindReconnect:
		return h.Result == "ok"
	}
	return false
}

func unsurfacedCommits(cs []CancelledCommit) int {
	n := 0
	for _, c := range cs {
		if c.Surfaced == "" {
			n++
		}
	}
	return n
}

func fetches(byTask map[string]int) int {
	n := 0
	for _, c := range byTask {
		n += c
	}
	return n
}

package timeline

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// Mark kinds, as the page's script and its tests know them.
const (
	kindCall         = "call"          // a logical call, first invoke to outcome; state: its outcome
	kindRetry        = "retry"         // a later attempt's invoke; state blind after an unknown outcome
	kindClientStart  = "client_start"  // a client (re)started
	kindClientStop   = "client_stop"   // a client stopped
	kindSessionNew   = "session_new"   // the client learned a session
	kindSessionLost  = "session_lost"  // the client dropped or lost a session; state: reason
	kindEvent        = "event"         // an SSE event received; state priming for a cursor-only event
	kindBreak        = "break"         // a stream broke; label: its class
	kindReconnect    = "reconnect"     // a reconnect attempt; state: its result
	kindResume       = "resume"        // a stream resumed from Last-Event-ID
	kindGap          = "gap"           // a gap the client surfaced
	kindGapRange     = "gap_range"     // the emitted events inside a surfaced gap (amber)
	kindSilent       = "silent"        // events lost silently (red)
	kindCharge       = "charge"        // a charge in the ledger; state original or dup when its order was charged again
	kindDedup        = "dedup"         // a charge the idempotency key turned away
	kindTool         = "tool"          // a tool running on the server, call_started to call_finished
	kindResult       = "result"        // a result written; state orphan, or orphan_surfaced
	kindDropped      = "dropped"       // a result with no session left to go to
	kindSessionClose = "session_close" // the server closed a session; label: reason
	kindFork         = "fork"          // a session opened while another of its client was live (red)
	kindWireRequest  = "wire_request"  // a request on an edge; state: the edge
	kindWireResponse = "wire_response" // a response of status 400 or more; state: the status
	kindWireClose    = "wire_close"    // a connection closed; state: how
	kindWireBad      = "wire_malformed"
)

// side is one account of what the server did: its records (the ledger, or
// the one derived from the wire), the checker's account of them, the file
// their N numbers, and whether they are drawn in the wire rows.
type side struct {
	recs    []sideeffects.Record
	acc     check.Accounts
	file    int64
	wireRow bool
}

// sessions makes a row for every session: the account's, with its life on
// the server, then any the history names that the account does not.
func (b *builder) sessions(sd *side, hist []history.Record) {
	spans := sd.acc.Sessions
	for _, h := range hist {
		if h.Session != "" && b.sessionClient[h.Session] == "" {
			b.sessionClient[h.Session] = h.Client
		}
	}
	for _, s := range spans {
		client := s.Client
		if client == "" {
			client = b.sessionClient[s.ID]
		}
		b.sessionClient[s.ID] = client
		l := b.lane(client)
		r := &l.Rows[b.sessionRow(l, s.ID)]
		r.From, r.Refs = s.OpenedUS, []ref{{sd.file, s.Opened}}
		r.To = sessionEnd(s)
		if s.Closed != 0 {
			r.Refs = append(r.Refs, ref{sd.file, s.Closed})
		}
		if !s.Claimed {
			r.State = "unclaimed"
		}
	}
	for i, h := range hist {
		if h.Kind != history.KindSessionNew {
			continue
		}
		l := b.lane(h.Client)
		r := &l.Rows[b.sessionRow(l, h.Session)]
		if r.Refs == nil {
			r.From, r.Refs = h.TUS, []ref{{fileHistory, int64(i + 1)}}
		}
	}
}

// sessionEnd is when a session stopped being live, 0 if it never did.
func sessionEnd(s check.SessionSpan) int64 {
	switch {
	case s.Closed != 0 && s.LostUS > 0:
		return min(s.ClosedUS, s.LostUS)
	case s.Closed != 0:
		return s.ClosedUS
	}
	return s.LostUS
}

func (b *builder) calls(acc *check.Accounts) {
	for _, c := range acc.Calls {
		state := string(c.Outcome)
		if !c.Resolved() {
			state = "unresolved"
		}
		label := fmt.Sprintf("call %s: %s, order %s, %d attempt(s), %s", c.ID, c.Tool, c.OrderID, c.Invokes, state)
		b.add(b.lane(c.Client), 0, mark{Kind: kindCall, T: c.StartUS, End: c.EndUS, State: state, Label: label,
			Refs: []ref{{fileHistory, int64(c.First)}, {fileHistory, int64(c.Last)}}})
	}
}

// history draws the client's own records.
func (b *builder) history(hist []history.Record, acc *check.Accounts) {
	blind := map[int]bool{}
	for _, r := range acc.BlindRetries {
		blind[r.Invoke] = true
	}
	for i := range hist {
		h, line := &hist[i], i+1
		m := mark{T: h.TUS, Refs: []ref{{fileHistory, int64(line)}}}
		row := -1
		switch h.Kind {
		case history.KindClientStart, history.KindClientStop:
			m.Kind, m.Label, row = string(h.Kind), strings.TrimSpace(h.Target+" "+h.Detail), 0
		case history.KindInvoke:
			if h.Attempt <= 1 && !blind[line] {
				continue
			}
			m.Kind, m.Label, row = kindRetry, fmt.Sprintf("attempt %d of call %s", h.Attempt, h.Call), 0
			if blind[line] {
				m.State = "blind"
			}
		case history.KindSessionNew:
			m.Kind, m.Label = kindSessionNew, "session "+h.Session+" "+h.Protocol
		case history.KindSessionLost:
			m.Kind, m.State, m.Label = kindSessionLost, h.Reason, "session lost: "+h.Reason
		case history.KindEvent:
			m.Kind = kindEvent // the page labels events from their records: there are many
			if h.Seq <= 0 {
				m.State = "priming"
			}
		case history.KindStreamBreak:
			m.Kind, m.Label = kindBreak, "stream break: "+h.Reason
		case history.KindReconnect:
			m.Kind, m.State, m.Label = kindReconnect, h.Result, fmt.Sprintf("reconnect attempt %d: %s", h.Attempt, h.Result)
		case history.KindResume:
			m.Kind, m.Label = kindResume, fmt.Sprintf("resume after event %d", h.LastEventID)
		case history.KindGap:
			m.Kind, m.Label = kindGap, fmt.Sprintf("gap surfaced: events (%d, %d]", h.FromEventID, h.ToEventID)
		default:
			continue
		}
		l, r := b.place(h.Client, h.Session)
		if row >= 0 {
			r = row
		}
		b.add(l, r, m)
	}
}

// sideEffects draws what the server and its tools did, as one account says.
func (b *builder) sideEffects(sd *side) {
	recs, acc := sd.recs, &sd.acc
	dup := map[int64]int{} // a charge of an order charged again: 1 for the original, k for the k-th
	for _, d := range acc.Duplicates {
		for i, n := range d.Charges {
			dup[n] = i + 1
		}
	}
	orphan := map[int64]string{}
	for _, o := range acc.Orphaned {
		orphan[o.N] = "orphan"
		if o.Surfaced {
			orphan[o.N] = "orphan_surfaced"
		}
	}
	tools := map[check.StreamKey]int{} // running tools, to their mark
	for i := range recs {
		r := &recs[i]
		m := mark{T: r.TUS, Refs: []ref{{sd.file, r.N}}}
		switch r.Kind {
		case sideeffects.KindCharge:
			m.Kind, m.Label = kindCharge, fmt.Sprintf("charge of order %s, %d cents", r.OrderID, r.AmountCents)
			switch k := dup[r.N]; {
			case k == 1:
				m.State, m.Label = "original", m.Label+": the original, charged again later"
			case k > 1:
				m.State, m.Label = "dup", fmt.Sprintf("%s: duplicate (charge %d of the order)", m.Label, k)
			}
		case sideeffects.KindChargeDeduplicated:
			m.Kind, m.Label = kindDedup, "charge of order "+r.OrderID+" deduplicated"
		case sideeffects.KindCallStarted:
			m.Kind, m.State, m.Label = kindTool, "running", fmt.Sprintf("tool %s running on the server (request %s)", r.Tool, r.RequestID)
			tools[check.StreamKey{Session: r.Session, RequestID: r.RequestID}] = len(b.p.Marks)
		case sideeffects.KindCallFinished:
			key := check.StreamKey{Session: r.Session, RequestID: r.RequestID}
			if j, ok := tools[key]; ok {
				t := &b.p.Marks[j]
				t.End, t.State, t.Refs = r.TUS, "finished", append(t.Refs, ref{sd.file, r.N})
				t.Label += ", finished: " + r.Reason
				delete(tools, key)
			}
			continue
		case sideeffects.KindResultWritten:
			m.Kind, m.State, m.Label = kindResult, orphan[r.N], fmt.Sprintf("result of request %s written (event %d)", r.RequestID, r.EventID)
			if m.State != "" {
				m.Label += ", never read"
			}
		case sideeffects.KindResultDropped:
			m.Kind, m.Label = kindDropped, "result dropped: "+r.Reason
		case sideeffects.KindSessionClosed:
			m.Kind, m.State, m.Label = kindSessionClose, r.Reason, "session closed: "+r.Reason
		default:
			continue
		}
		if sd.file == fileWire {
			m.Label += " (from the wire)"
		}
		l, row := b.place(r.Client, r.Session)
		if sd.wireRow {
			row = b.wireRow(l)
		}
		b.add(l, row, m)
	}
}

// losses draws the events the checker found lost: silently, in red, and
// inside the gaps the client surfaced, in amber, over the time the server
// emitted them.
func (b *builder) losses(sd *side, hist []history.Record) {
	acc, recs := &sd.acc, sd.recs
	byN := make(map[int64]*sideeffects.Record, len(recs))
	emitted := map[check.StreamKey][]*sideeffects.Record{}
	for i := range recs {
		r := &recs[i]
		byN[r.N] = r
		if r.Kind == sideeffects.KindEventEmitted {
			k := check.StreamKey{Session: r.Session, RequestID: r.RequestID}
			emitted[k] = append(emitted[k], r)
		}
	}
	for _, s := range acc.Streams {
		l, row := b.place("", s.Session)
		if len(s.Silent) > 0 {
			m := mark{Kind: kindSilent, T: -1, Label: fmt.Sprintf("%d events of request %s lost silently (seq %d..%d)",
				s.LostSilent, s.RequestID, s.Silent[0].Seq, s.Silent[len(s.Silent)-1].Seq)}
			for _, e := range s.Silent {
				if r := byN[e.N]; r != nil {
					m.span(r.TUS)
				}
				if len(m.Refs) < maxRangeRefs {
					m.Refs = append(m.Refs, ref{sd.file, e.N})
				}
			}
			if s.Later > 0 {
				m.Refs = append(m.Refs, ref{fileHistory, int64(s.Later)})
			}
			b.add(l, row, m)
		}
		for _, line := range s.Gaps {
			g := &hist[line-1]
			m := mark{Kind: kindGapRange, T: -1, Label: fmt.Sprintf("events (%d, %d] lost inside a surfaced gap", g.FromEventID, g.ToEventID),
				Refs: []ref{{fileHistory, int64(line)}}}
			for _, r := range emitted[s.StreamKey] {
				if r.EventID > g.FromEventID && r.EventID <= g.ToEventID {
					m.span(r.TUS)
					if len(m.Refs) < maxRangeRefs {
						m.Refs = append(m.Refs, ref{sd.file, r.N})
					}
				}
			}
			if m.T >= 0 {
				b.add(l, row, m)
			}
		}
	}
}

// span widens a range mark (T -1 while empty) to hold t.
func (m *mark) span(t int64) {
	if m.T < 0 {
		m.T, m.End = t, t
		return
	}
	m.T, m.End = min(m.T, t), max(m.End, t)
}

func (b *builder) forks(sd *side) {
	for _, f := range sd.acc.Forks {
		l := b.lane(f.Client)
		m := mark{Kind: kindFork, T: f.New.OpenedUS, End: sessionEnd(f.Live),
			Label: fmt.Sprintf("session %s opened while session %s was live", f.New.ID, f.Live.ID),
			Refs:  []ref{{sd.file, f.Live.Opened}, {sd.file, f.New.Opened}}}
		if m.End == 0 || m.End < m.T {
			m.End = b.p.EndUS
		}
		b.add(l, b.sessionRow(l, f.New.ID), m)
	}
}

// wireKey is the key of a lane's wire row among its session rows.
const wireKey = "\x00wire"

// wire draws what crossed the proxy's edges, in the row of the client whose
// connection it was: the connection's session, or the client name its
// initialize gave.
func (b *builder) wire(recs []wire.Record) {
	type connKey struct {
		edge wire.Edge
		conn int64
	}
	owner := map[connKey]string{}
	for i := range recs {
		r := &recs[i]
		k := connKey{r.Edge, r.Conn}
		if owner[k] != "" {
			continue
		}
		if r.Header != nil && b.sessionClient[r.Header.SessionID] != "" {
			owner[k] = b.sessionClient[r.Header.SessionID]
		}
		for _, m := range r.Messages {
			if m.ClientName != "" {
				owner[k] = m.ClientName
			}
		}
	}
	for i := range recs {
		r := &recs[i]
		m := mark{T: r.TUS, Refs: []ref{{fileWire, r.N}}}
		switch r.Kind {
		case wire.KindRequest:
			m.Kind, m.State, m.Label = kindWireRequest, string(r.Edge), wireRequestLabel(r)
		case wire.KindResponse:
			if r.Status < 400 {
				continue
			}
			m.Kind, m.State, m.Label = kindWireResponse, strconv.Itoa(r.Status), fmt.Sprintf("%s edge: HTTP %d", r.Edge, r.Status)
		case wire.KindClose:
			m.Kind, m.State, m.Label = kindWireClose, string(r.End), fmt.Sprintf("%s edge: connection %d closed (%s by %s)", r.Edge, r.Conn, r.End, r.By)
		case wire.KindMalformed:
			m.Kind, m.Label = kindWireBad, fmt.Sprintf("%s edge: %s", r.Edge, r.Problem)
		default:
			continue
		}
		l := b.lane(owner[connKey{r.Edge, r.Conn}])
		b.add(l, b.wireRow(l), m)
	}
}

// wireRow returns the row of a lane for the wire, adding it.
func (b *builder) wireRow(l *lane) int {
	if i, ok := l.rowOf[wireKey]; ok {
		return i
	}
	l.Rows = append(l.Rows, row{Kind: rowWire})
	l.rowOf[wireKey] = len(l.Rows) - 1
	return len(l.Rows) - 1
}

func wireRequestLabel(r *wire.Record) string {
	s := fmt.Sprintf("%s edge: %s %s", r.Edge, r.Method, r.Path)
	for _, m := range r.Messages {
		if m.Method != "" {
			s += " " + m.Method
		}
		if m.Tool != "" {
			s += " " + m.Tool
			var args struct {
				OrderID string `json:"order_id"`
			}
			if json.Unmarshal(m.Args, &args) == nil && args.OrderID != "" {
				s += " order " + args.OrderID
			}
		}
	}
	return s
}

func (b *builder) faults(entries []faults.Entry) {
	for i, f := range entries {
		to := f.EndUS
		if to < f.StartUS {
			to = b.p.EndUS
		}
		label := fmt.Sprintf("fault %d: %s on %s", f.Index, f.Kind, f.Target)
		if f.Repeat > 0 {
			label = fmt.Sprintf("fault %d repeat %d: %s on %s", f.Index, f.Repeat, f.Kind, f.Target)
		}
		b.p.Faults = append(b.p.Faults, fault{Kind: f.Kind, Target: f.Target, From: f.StartUS, To: to, Label: label,
			Error: f.Error, Refs: []ref{{fileFaults, int64(i + 1)}}})
	}
}

// refFiles maps the files a verdict's evidence cites to the page's.
var refFiles = map[string]int64{check.RefHistory: fileHistory, check.RefLedger: fileLedger, check.RefFaults: fileFaults, check.RefWire: fileWire}

// linkResults copies the verdict's results with each evidence line linked to
// the records it cites (check.Evidence.Refs); the exit record, which the
// page does not show, is left out.
func linkResults(v check.Verdict) []result {
	var out []result
	for _, r := range append(append([]check.Result(nil), v.Assumptions...), v.Invariants...) {
		res := result{ID: r.ID, Status: r.Status, Summary: r.Summary, Account: r.Account, Disagreement: r.Disagreement, Omitted: r.Omitted}
		for _, e := range r.Evidence {
			line := evidence{Text: e.Text}
			for _, c := range e.Refs {
				if file, ok := refFiles[c.File]; ok {
					line.Refs = append(line.Refs, ref{file, c.N})
				}
			}
			res.Evidence = append(res.Evidence, line)
		}
		out = append(out, res)
	}
	return out
}

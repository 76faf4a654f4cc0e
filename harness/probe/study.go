package probe

import (
	"fmt"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/wire"
)

// resumeClass is how a server answered a client that came back with
// Last-Event-ID after missing some of a call's events.
type resumeClass int

const (
	// noResume: the client never came back with Last-Event-ID.
	noResume resumeClass = iota
	// honoured: 200, and the resumed stream replayed exactly the missed
	// events, in order, and the result.
	honoured
	// silentLoss: 200, and the resumed stream skipped missed events
	// without a word.
	silentLoss
	// refused: an error status (400, 409, 410, ...).
	refused
	// sessionGone: 404: the session no longer exists.
	sessionGone
	// torn: the connection ended with no answer.
	torn
)

// study is what one cut-and-resume run shows, read from its wire: the
// call whose stream was cut, the cursor the client came back with, and the
// server's answer.
type study struct {
	outcome *lab.Outcome
	// Session and Protocol: the call's session and the protocol the server
	// answered initialize with.
	Session  string
	Protocol string
	// CallFound says a tools/call of the probed tool reached the server.
	CallFound bool
	// Total is the call's last progress number (the progress total, or
	// the highest number seen); 0 when the call sent no progress.
	Total int64
	// Cursor is the Last-Event-ID the client came back with; CursorProgress
	// the progress number of that event (0 for a priming event);
	// CursorUS when it crossed the server edge.
	Cursor         string
	CursorProgress int64
	CursorUS       int64
	CursorKnown    bool
	// ResumeUS is when the first resume crossed the server edge.
	ResumeUS int64
	// CutUS is when the fault cut the call (its injection's start).
	CutUS int64
	Class resumeClass
	// Answer is the server's answer to the first resume, in words.
	Answer string
	Status int
	// Replayed lists the progress numbers the resumed stream carried;
	// ResultReplayed whether it carried the result.
	Replayed       []int64
	ResultReplayed bool
	// ResultAsEvent: the call's result crossed as an SSE event with an id.
	ResultAsEvent bool
	// SessionAfter is the status of the first POST on the session after
	// the resume (0: none crossed).
	SessionAfter int
	// Evidence names the wire records the study rests on.
	Evidence string
}

// Away is how long the client was away: from its cursor event to its
// resume, on the server edge.
func (s *study) Away() time.Duration {
	return time.Duration(s.ResumeUS-s.CursorUS) * time.Microsecond
}

// Idle is how long the session saw no connection: from the cut to the
// resume.
func (s *study) Idle() time.Duration {
	return time.Duration(s.ResumeUS-s.CutUS) * time.Microsecond
}

// Missed is how many events the server emitted on the call's stream after
// the cursor: its progress notifications, and its result when the server
// sends results as SSE events with ids (resultEvent).
func (s *study) Missed(resultEvent bool) int64 {
	n := s.Total - s.CursorProgress
	if resultEvent {
		n++
	}
	return n
}

// studyResume reads a run in which a fault cut a call of tool and the
// client came back with Last-Event-ID.
func studyResume(o *lab.Outcome, tool string) *study {
	s := &study{outcome: o}
	server := view(o.Wire, wire.EdgeServer)
	call, msg := server.firstCall(tool)
	if call == nil {
		return s
	}
	s.CallFound = true
	s.Session = call.session()
	s.Protocol = server.negotiated(s.Session)
	tok := token(msg)
	ids := map[string]int64{} // event id → progress number on the call's stream
	idUS := map[string]int64{}
	for _, r := range server.sessionEvents(s.Session) {
		if t, ok := totalOf(r); ok && t > s.Total {
			s.Total = t
		}
		p, ok := progressOf(r, tok)
		if ok && p > s.Total {
			s.Total = p
		}
		if r.EventID == "" {
			continue
		}
		if carriesResult(r, msg.ID) {
			s.ResultAsEvent = true
		}
		if _, seen := ids[r.EventID]; !seen {
			ids[r.EventID], idUS[r.EventID] = p, r.TUS
		}
	}
	for _, f := range o.Faults {
		if f.Error == "" && (s.CutUS == 0 || f.StartUS < s.CutUS) {
			s.CutUS = f.StartUS
		}
	}
	resumes := server.after(call, s.Session, (*exchange).isResume)
	if len(resumes) == 0 {
		s.Answer = "the client never came back with Last-Event-ID"
		return s
	}
	r := resumes[0]
	s.Cursor, s.ResumeUS, s.Status = r.lastEventID(), r.startUS(), r.status()
	s.CursorProgress, s.CursorKnown = ids[s.Cursor]
	s.CursorUS = idUS[s.Cursor]
	s.Answer = r.answer()
	for _, e := range r.events {
		if p, ok := progressOf(e, tok); ok {
			s.Replayed = append(s.Replayed, p)
		}
		if carriesResult(e, msg.ID) {
			s.ResultReplayed = true
		}
	}
	if r.resp != nil && carriesResult(r.resp, msg.ID) {
		s.ResultReplayed = true
	}
	for _, y := range server.after(r, s.Session, func(y *exchange) bool { return y.method() == http.MethodPost }) {
		s.SessionAfter = y.status()
		break
	}
	s.Class = classify(s, r)
	s.Evidence = fmt.Sprintf("wire record %d: GET Last-Event-ID %s answered %s", r.req.N, s.Cursor, s.Answer)
	return s
}

func classify(s *study, r *exchange) resumeClass {
	switch {
	case r.torn():
		return torn
	case r.status() == http.StatusNotFound:
		return sessionGone
	case r.status() >= 300:
		return refused
	case r.resp == nil:
		return torn
	case !s.CursorKnown:
		return silentLoss
	}
	if exactReplay(s.Replayed, s.CursorProgress, s.Total) && s.ResultReplayed {
		return honoured
	}
	return silentLoss
}

// exactReplay reports whether got is from+1, from+2, ..., to.
func exactReplay(got []int64, from, to int64) bool {
	if int64(len(got)) != to-from {
		return false
	}
	for i, p := range got {
		if p != from+int64(i)+1 {
			return false
		}
	}
	return true
}

// describeReplay says what the resumed stream carried.
func (s *study) describeReplay() string {
	switch n := len(s.Replayed); {
	case n == 0 && s.ResultReplayed:
		return "the result and no progress event"
	case n == 0:
		return "no event"
	default:
		r := "and the result"
		if !s.ResultReplayed {
			r = "and no result"
		}
		return fmt.Sprintf("progress %d..%d (%d events) %s", s.Replayed[0], s.Replayed[n-1], n, r)
	}
}

// firstFault is the first injection the run logged, if any.
func firstFault(fs []faults.Entry) (faults.Entry, bool) {
	for _, f := range fs {
		if f.Error == "" {
			return f, true
		}
	}
	return faults.Entry{}, false
}

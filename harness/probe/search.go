package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/wire"
)

// resumptionChecks read the baseline run: a few events missed, then a
// resume.
func (p *prober) resumptionChecks(rev string, s *study) []Check {
	o := s.outcome
	server := view(o.Wire, wire.EdgeServer)
	call, msg := server.firstCall(p.opts.Server.Stream.Tool)
	if call == nil {
		why := "no tools/call of the stream tool reached the server in the baseline run"
		return []Check{cannot("event-ids", checkName["event-ids"], why, o), cannot("resume-replays-missed", checkName["resume-replays-missed"], why, o)}
	}
	var withID, without int
	for _, e := range call.events {
		if len(e.Messages) == 0 {
			continue
		}
		if e.EventID != "" {
			withID++
		} else {
			without++
		}
	}
	out := []Check{verdictOf("event-ids", checkName["event-ids"], without == 0 && withID > 0,
		fmt.Sprintf("%d of %d message events on the call's stream carried an id (wire record %d on)", withID, withID+without, call.req.N), o)}
	priming := len(call.events) > 0 && call.events[0].Priming
	retry := int64(0)
	for _, e := range server.sessionEvents(s.Session) {
		retry = max(retry, e.RetryMS)
	}
	primingEv := "the call's stream opened with a message event, no priming event"
	if priming {
		primingEv = fmt.Sprintf("the call's stream opened with event %s: an id and no data (wire record %d)", call.events[0].EventID, call.events[0].N)
	}
	retryEv := "no event of the session carried a retry field"
	if retry > 0 {
		retryEv = fmt.Sprintf("retry: %d ms (at run scale) on the session's events", retry)
	}
	if rev >= "2025-11-25" { // the revision that asks servers for both
		out = append(out, verdictOf("priming-event", checkName["priming-event"], priming, primingEv, o),
			verdictOf("retry-field", checkName["retry-field"], retry > 0, retryEv, o))
	} else {
		out = append(out, measured("priming-event", checkName["priming-event"], yesNo(priming), primingEv+" (not asked of this revision)", nil, o),
			measured("retry-field", checkName["retry-field"], yesNo(retry > 0), retryEv+" (not asked of this revision)", nil, o))
	}
	out = append(out, idsPerStream(server, s.Session, token(msg), msg.ID, o))
	switch s.Class {
	case noResume:
		return append(out, cannot("resume-replays-missed", checkName["resume-replays-missed"], s.Answer, o))
	case refused, sessionGone:
		return append(out, cannot("resume-replays-missed", checkName["resume-replays-missed"],
			fmt.Sprintf("the resume after %d missed events was answered %s: nothing was replayed to compare", s.Missed(s.ResultAsEvent), s.Answer), o))
	}
	ev := fmt.Sprintf("missed progress %d..%d and the result; the GET with Last-Event-ID %s was answered %s and carried %s",
		s.CursorProgress+1, s.Total, s.Cursor, s.Answer, s.describeReplay())
	return append(out, verdictOf("resume-replays-missed", checkName["resume-replays-missed"], s.Class == honoured, ev, o))
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// idsPerStream checks that no event id was given to two different
// messages of the session: a replay repeats an id with its message.
func idsPerStream(server *edgeView, session, tok, callID string, o *lab.Outcome) Check {
	seen := map[string]string{}
	for _, e := range server.sessionEvents(session) {
		if e.EventID == "" || e.Priming {
			continue
		}
		what := describeEvent(e, tok, callID)
		if prev, ok := seen[e.EventID]; ok && prev != what {
			return verdictOf("event-ids-per-stream", checkName["event-ids-per-stream"], false,
				fmt.Sprintf("event id %s named %s and then %s (wire record %d)", e.EventID, prev, what, e.N), o)
		}
		seen[e.EventID] = what
	}
	return verdictOf("event-ids-per-stream", checkName["event-ids-per-stream"], len(seen) > 0,
		fmt.Sprintf("%d event ids on the session, each naming one message, replays included", len(seen)), o)
}

func describeEvent(e *wire.Record, tok, callID string) string {
	if p, ok := progressOf(e, tok); ok {
		return fmt.Sprintf("progress %d", p)
	}
	if carriesResult(e, callID) {
		return "the result"
	}
	var parts []string
	for _, m := range e.Messages {
		parts = append(parts, m.Method+m.ID)
	}
	return strings.Join(parts, ",")
}

// point is one run of a search.
type point struct {
	s       *study
	missed  int64
	away    time.Duration // real-world
	idle    time.Duration // real-world
	class   resumeClass
	expired bool // the session was gone when the client came back
}

func (p *prober) pointOf(s *study, resultEvent bool) point {
	pt := point{s: s, missed: s.Missed(resultEvent), away: p.real(s.Away()), idle: p.real(s.Idle()), class: s.Class}
	pt.expired = s.Class == sessionGone || s.SessionAfter == 404
	return pt
}

// kept reports whether the point's missed events were replayed.
func (pt point) kept() bool { return pt.class == honoured && !pt.expired }

// lost reports whether the session was alive and the missed events were
// not replayed.
func (pt point) lost() bool {
	return !pt.expired && (pt.class == silentLoss || pt.class == refused || pt.class == torn)
}

// eventSearch searches the number of missed events a resume survives:
// each run cuts the stream with that many events of the call left, keeps
// the client away until the call has ended, and reads the answer.
func (p *prober) eventSearch(ctx context.Context, rev string, cal *calibration, base *study) []Check {
	resultEvent := base.ResultAsEvent
	pts := []point{p.pointOf(base, resultEvent)}
	most := cal.events - 2
	requested := map[int64]int{}
	var offset int64 // what was asked for less what was measured: the median so far
	var offsets []int64
	for len(pts) <= p.limits.SearchRuns {
		lo, hi := bracket(pts, func(pt point) int64 { return pt.missed })
		var want int64
		switch {
		case hi < 0 && lo >= most-1:
		case hi < 0 && !hasMissed(pts, most):
			want = most
		case hi >= 0 && lo < 0 && requested[1] == 0:
			want = 1
		case hi >= 0 && lo >= 0 && hi-lo > 1:
			want = (lo + hi) / 2
		}
		if want == 0 {
			break
		}
		ask, ok := nextAsk(min(max(want+offset, 1), most), most, requested)
		if !ok {
			break
		}
		requested[ask]++
		s, err := p.cutAndResume(ctx, rev, cal, fmt.Sprintf("retention-events-%d", ask), ask, 0)
		if err != nil {
			return []Check{cannot("retention-events", checkName["retention-events"], err.Error())}
		}
		resultEvent = resultEvent || s.ResultAsEvent
		pt := p.pointOf(s, resultEvent)
		pts = append(pts, pt)
		if pt.kept() || pt.lost() {
			// The median, not the last: on a loaded machine one cut can
			// land far from where it was asked (13 missed of 53 asked),
			// and that run must not steer the next.
			offsets = append(offsets, ask-pt.missed)
			sorted := slices.Sorted(slices.Values(offsets))
			offset = sorted[len(sorted)/2]
		}
	}
	return eventFindings(pts, resultEvent)
}

// maxAsks is how often one number of events left is asked for: what a run
// misses is that number give or take one or two (how many events the
// server sends while the cut takes effect), so near the bound the same ask
// is worth another run.
const maxAsks = 3

// nextAsk returns the number of events left to ask for: ask, or the
// nearest to it (one above, one below, two above, ...) asked fewer than
// maxAsks times; false when none in [1, most] is left.
func nextAsk(ask, most int64, requested map[int64]int) (int64, bool) {
	for d := int64(0); d <= most; d++ {
		for _, a := range []int64{ask + d, ask - d} {
			if a >= 1 && a <= most && requested[a] < maxAsks {
				return a, true
			}
		}
	}
	return 0, false
}

func hasMissed(pts []point, n int64) bool {
	return slices.ContainsFunc(pts, func(pt point) bool { return pt.missed == n })
}

// bracket returns the largest measure of a kept point and the smallest of a
// lost one (-1 for none).
func bracket(pts []point, measure func(point) int64) (lo, hi int64) {
	lo, hi = -1, -1
	for _, pt := range pts {
		m := measure(pt)
		switch {
		case pt.kept() && m > lo:
			lo = m
		case pt.lost() && (hi < 0 || m < hi):
			hi = m
		}
	}
	return lo, hi
}

func outcomesOf(pts []point) []*lab.Outcome {
	out := make([]*lab.Outcome, len(pts))
	for i, pt := range pts {
		out[i] = pt.s.outcome
	}
	return out
}

func eventFindings(pts []point, resultEvent bool) []Check {
	lo, hi := bracket(pts, func(pt point) int64 { return pt.missed })
	unit := "events (progress notifications"
	if resultEvent {
		unit += " and the result, which the server sends as an event with an id)"
	} else {
		unit += ")"
	}
	var c Check
	switch {
	case lo < 0 && hi < 0:
		c = cannot("retention-events", checkName["retention-events"], "no resume was answered either way: "+pts[0].s.Answer, outcomesOf(pts)...)
	case hi < 0:
		c = measured("retention-events", checkName["retention-events"], fmt.Sprintf("unbounded up to %d events tried", lo),
			fmt.Sprintf("every resume was honoured, up to %d missed %s", lo, unit), map[string]any{"unbounded": true, "tried": lo}, outcomesOf(pts)...)
	case lo < 0:
		c = measured("retention-events", checkName["retention-events"], fmt.Sprintf("fewer than %d events", hi),
			fmt.Sprintf("no resume was honoured: the smallest tried, %d missed %s, was answered %s", hi, unit, lostAt(pts, hi).s.Answer),
			map[string]any{"below": hi}, outcomesOf(pts)...)
	case lo >= hi:
		fig := fmt.Sprintf("about %d to %d events, not steady", hi, lo)
		if hi == lo {
			fig = fmt.Sprintf("about %d events, not steady", lo)
		}
		c = measured("retention-events", checkName["retention-events"], fig,
			fmt.Sprintf("%d missed %s were replayed, but %d were not (%s, after %s away): the bound is not a fixed number of events, or time evicted them first", lo, unit, hi, lostAt(pts, hi).s.Answer, seconds(lostAt(pts, hi).away)),
			map[string]any{"kept": lo, "lost": hi}, outcomesOf(pts)...)
	case hi == lo+1:
		c = measured("retention-events", checkName["retention-events"], fmt.Sprintf("%d events", lo),
			fmt.Sprintf("%d missed %s were replayed; %d were not (%s, after %s away)", lo, unit, hi, lostAt(pts, hi).s.Answer, seconds(lostAt(pts, hi).away)),
			map[string]any{"events": lo}, outcomesOf(pts)...)
	default:
		c = measured("retention-events", checkName["retention-events"], fmt.Sprintf("%d to %d events", lo, hi-1),
			fmt.Sprintf("%d missed %s were replayed; %d were not (%s); the search stopped there", lo, unit, hi, lostAt(pts, hi).s.Answer),
			map[string]any{"at_least": lo, "below": hi}, outcomesOf(pts)...)
	}
	return []Check{c, cursorAnswer(pts)}
}

// lostAt returns the lost point whose missed count is n.
func lostAt(pts []point, n int64) point {
	for _, pt := range pts {
		if pt.lost() && pt.missed == n {
			return pt
		}
	}
	return pts[0]
}

// cursorAnswer judges the server's answer to a cursor it could not honour:
// an explicit refusal a client can read (409 or 410, or a 400 with a JSON
// body) passes; a 200 that skips events (silent loss), a torn connection
// and a plain-text 400 fail.
func cursorAnswer(pts []point) Check {
	const id = "cursor-evicted-answer"
	for _, pt := range pts {
		if !pt.lost() {
			continue
		}
		s := pt.s
		ev := fmt.Sprintf("after %d missed events and %s away (cursor %s, progress %d of %d): %s", pt.missed, seconds(pt.away), s.Cursor, s.CursorProgress, s.Total, s.Answer)
		switch s.Class {
		case silentLoss:
			c := verdictOf(id, checkName[id], false, ev+"; the resumed stream carried "+s.describeReplay()+": silent loss", s.outcome)
			c.Figure = "200, silent loss"
			return c
		case torn:
			c := verdictOf(id, checkName[id], false, ev, s.outcome)
			c.Figure = "torn connection"
			return c
		}
		ok := s.Status == 409 || s.Status == 410 || machineReadable(s)
		c := verdictOf(id, checkName[id], ok, ev, s.outcome)
		c.Figure = fmt.Sprint(s.Status)
		if s.Status == 400 && !ok {
			c.Evidence += " (plain text: a client cannot tell an evicted cursor from a malformed request)"
		}
		return c
	}
	return cannot(id, checkName[id], "no cursor went unhonoured in the runs tried", outcomesOf(pts)...)
}

// machineReadable reports whether the refusal's body is JSON.
func machineReadable(s *study) bool {
	for _, x := range view(s.outcome.Wire, wire.EdgeServer).exchanges {
		if x.isResume() && x.lastEventID() == s.Cursor && x.resp != nil && x.resp.Header != nil {
			return strings.Contains(x.resp.Header.ContentType, "json") && strings.HasPrefix(strings.TrimSpace(x.resp.ErrorBody), "{")
		}
	}
	return false
}

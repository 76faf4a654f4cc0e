package probe

import (
	"context"
	"fmt"
	"time"
)

// timeSearch searches how long a client may stay away: each run cuts the
// stream with two events of the call left and keeps the client away for a
// chosen time, then a second call shows whether the session is alive. Two
// boundaries come out of it: how long the missed events are kept
// (retention in time) and how long an idle session lives (its TTL).
func (p *prober) timeSearch(ctx context.Context, rev string, cal *calibration) []Check {
	if ts := p.opts.Server.TimeStream; ts != nil {
		short, err := p.calibrate(ctx, rev, "calibrate-short", *ts)
		if err != nil {
			return []Check{cannot("retention-seconds", checkName["retention-seconds"], err.Error())}
		}
		if short.why == "" {
			cal = short
		}
	}
	missed := min(max(cal.events/10, 5), cal.events-3)
	var pts []point
	var lags []time.Duration
	var failed error
	run := func(away time.Duration) bool {
		if len(pts) >= 2*p.limits.SearchRuns+8 || failed != nil {
			return false
		}
		lag := time.Duration(0)
		for _, l := range lags {
			lag += l / time.Duration(len(lags))
		}
		hold := max(away-lag, time.Second)
		s, err := p.cutAndResume(ctx, rev, cal, fmt.Sprintf("away-%s", hold.Round(time.Second)), missed, hold)
		if err != nil {
			failed = err
			return false
		}
		pt := p.pointOf(s, s.ResultAsEvent)
		pts = append(pts, pt)
		if s.ResumeUS > 0 {
			lags = append(lags, pt.away-hold)
		}
		return true
	}
	limit := p.limits.MaxAway
	// Grow the time away until a resume is not honoured.
	for away := 5 * time.Second; ; away *= 4 {
		away = min(away, limit)
		if !run(away) || !pts[len(pts)-1].kept() || away >= limit {
			break
		}
	}
	awayOf := func(pt point) time.Duration { return pt.away }
	idleOf := func(pt point) time.Duration { return pt.idle }
	p.bisect(&pts, awayOf, point.kept, func(pt point) bool { return !pt.kept() && (pt.lost() || pt.expired) }, run)
	// Then the session's lifetime, if the first loss left it alive.
	if !anyExpired(pts) {
		for away := longest(pts, awayOf) * 4; ; away *= 4 {
			away = min(away, limit)
			if longest(pts, awayOf) >= limit || !run(away) || pts[len(pts)-1].expired || away >= limit {
				break
			}
		}
	}
	alive := func(pt point) bool { return !pt.expired && (pt.kept() || pt.lost()) }
	p.bisect(&pts, idleOf, alive, func(pt point) bool { return pt.expired }, run)
	if failed != nil {
		return []Check{cannot("retention-seconds", checkName["retention-seconds"], failed.Error())}
	}
	return []Check{p.retentionTime(pts), p.sessionTTL(pts), expiredAnswer(pts, limit)}
}

func anyExpired(pts []point) bool {
	for _, pt := range pts {
		if pt.expired {
			return true
		}
	}
	return false
}

func longest(pts []point, m func(point) time.Duration) time.Duration {
	var out time.Duration
	for _, pt := range pts {
		out = max(out, m(pt))
	}
	return out
}

// span returns the longest measure of a good point and the shortest of a
// bad one (-1 for none).
func span(pts []point, m func(point) time.Duration, good, bad func(point) bool) (lo, hi time.Duration) {
	lo, hi = -1, -1
	for _, pt := range pts {
		v := m(pt)
		switch {
		case good(pt) && v > lo:
			lo = v
		case bad(pt) && (hi < 0 || v < hi):
			hi = v
		}
	}
	return lo, hi
}

// bisect narrows the boundary between good and bad points until its
// width is within the precision or the runs are spent.
func (p *prober) bisect(pts *[]point, m func(point) time.Duration, good, bad func(point) bool, run func(time.Duration) bool) {
	for range p.limits.SearchRuns {
		lo, hi := span(*pts, m, good, bad)
		if lo < 0 || hi < 0 || hi <= lo || float64(hi-lo) <= p.limits.Precision*float64(hi) {
			return
		}
		if !run((lo + hi) / 2) {
			return
		}
	}
}

func seconds(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

// retentionTime reads the retention window in time.
func (p *prober) retentionTime(pts []point) Check {
	const id = "retention-seconds"
	awayOf := func(pt point) time.Duration { return pt.away }
	lo, hi := span(pts, awayOf, point.kept, point.lost)
	_, expiredAt := span(pts, func(pt point) time.Duration { return pt.idle }, func(point) bool { return false }, func(pt point) bool { return pt.expired })
	all := outcomesOf(pts)
	switch {
	case lo < 0 && hi < 0:
		why := "no resume was answered either way"
		if len(pts) > 0 {
			why += ": " + pts[0].s.Answer
		}
		return cannot(id, checkName[id], why, all...)
	case hi < 0 && expiredAt > 0:
		return measured(id, checkName[id], "as long as the session lives",
			fmt.Sprintf("missed events were replayed after %s away; the session itself expired before any was evicted (after %s idle)", seconds(lo), seconds(expiredAt)),
			map[string]any{"at_least_s": lo.Seconds(), "session_bound": true}, all...)
	case hi < 0:
		return measured(id, checkName[id], fmt.Sprintf("unbounded up to %s tried", seconds(lo)),
			fmt.Sprintf("missed events were replayed after up to %s away", seconds(lo)), map[string]any{"unbounded": true, "tried_s": lo.Seconds()}, all...)
	case lo < 0:
		return measured(id, checkName[id], "under "+seconds(hi),
			fmt.Sprintf("the shortest time away tried, %s, already lost the missed events (%s)", seconds(hi), lostAfter(pts, hi).s.Answer),
			map[string]any{"below_s": hi.Seconds()}, all...)
	}
	mid := (lo + hi) / 2
	return measured(id, checkName[id], "≈ "+seconds(mid),
		fmt.Sprintf("replayed after %s away, not after %s (%s)", seconds(lo), seconds(hi), lostAfter(pts, hi).s.Answer),
		map[string]any{"seconds": mid.Seconds(), "at_least_s": lo.Seconds(), "below_s": hi.Seconds()}, all...)
}

func lostAfter(pts []point, away time.Duration) point {
	for _, pt := range pts {
		if pt.lost() && pt.away == away {
			return pt
		}
	}
	return pts[0]
}

// sessionTTL reads the idle session's lifetime.
func (p *prober) sessionTTL(pts []point) Check {
	const id = "session-idle-ttl"
	idleOf := func(pt point) time.Duration { return pt.idle }
	alive := func(pt point) bool { return !pt.expired && (pt.kept() || pt.lost()) }
	lo, hi := span(pts, idleOf, alive, func(pt point) bool { return pt.expired })
	all := outcomesOf(pts)
	switch {
	case lo < 0 && hi < 0:
		return cannot(id, checkName[id], "no run showed the session alive or gone", all...)
	case hi < 0:
		return measured(id, checkName[id], fmt.Sprintf("not expired up to %s idle", seconds(lo)),
			fmt.Sprintf("the session answered after %s without a connection", seconds(lo)), map[string]any{"unbounded": true, "tried_s": lo.Seconds()}, all...)
	case lo < 0:
		return measured(id, checkName[id], "under "+seconds(hi), fmt.Sprintf("the session was gone after %s idle, the shortest tried", seconds(hi)),
			map[string]any{"below_s": hi.Seconds()}, all...)
	}
	mid := (lo + hi) / 2
	return measured(id, checkName[id], "≈ "+seconds(mid), fmt.Sprintf("alive after %s idle, gone after %s", seconds(lo), seconds(hi)),
		map[string]any{"seconds": mid.Seconds(), "at_least_s": lo.Seconds(), "below_s": hi.Seconds()}, all...)
}

// expiredAnswer checks that a request on an expired session gets 404.
func expiredAnswer(pts []point, limit time.Duration) Check {
	const id = "session-expired-404"
	for _, pt := range pts {
		if !pt.expired {
			continue
		}
		s := pt.s
		if s.Class == sessionGone {
			return verdictOf(id, checkName[id], true, fmt.Sprintf("after %s idle the resume was answered %s", seconds(pt.idle), s.Answer), s.outcome)
		}
		return verdictOf(id, checkName[id], false,
			fmt.Sprintf("after %s idle the resume was answered %s, and only the next POST got 404", seconds(pt.idle), s.Answer), s.outcome)
	}
	return cannot(id, checkName[id], fmt.Sprintf("no session expired within the %s tried", seconds(limit)), outcomesOf(pts)...)
}

// retentionVsSession judges the seed's condition 2: the events a client
// missed are kept as long as the session they belong to lives.
func retentionVsSession(cs []Check) Check {
	const id = "retention-outlives-session"
	var ret, ttl *Check
	for i := range cs {
		switch cs[i].ID {
		case "retention-seconds":
			ret = &cs[i]
		case "session-idle-ttl":
			ttl = &cs[i]
		}
	}
	if ret == nil || ttl == nil || ret.Status != Measured || ttl.Status != Measured {
		return cannot(id, checkName[id], "the retention window or the session's TTL was not measured")
	}
	c := Check{ID: id, Name: checkName[id], Experiments: ret.Experiments}
	below, evicts := ret.Values["below_s"].(float64)
	ttlAtLeast, _ := ttl.Values["at_least_s"].(float64)
	switch {
	case ret.Values["session_bound"] == true:
		c.Status, c.Evidence = Pass, "no missed event was evicted before the session itself expired"
	case evicts && ttlAtLeast > below:
		c.Status = Fail
		c.Evidence = fmt.Sprintf("missed events were lost after %.1fs away while the session was still alive after %.1fs idle: a client can come back to a live session and find its cursor gone", below, ttlAtLeast)
	case !evicts:
		c.Status, c.Evidence = Pass, "no missed event was evicted in the times tried: "+ret.Figure
	default:
		c.Status = CannotTell
		c.Why = fmt.Sprintf("retention (%s) and the session's TTL (%s) were not told apart in the runs tried", ret.Figure, ttl.Figure)
		c.Evidence = c.Why
	}
	return c
}

package probe

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/wire"
)

// ScenarioPrefix names the probe's scenarios in checks.json and baselines:
// chaosrun-probe-server-<revision>, chaosrun-probe-client.
const ScenarioPrefix = "chaosrun-probe"

func serverScenario(protocol string) string { return ScenarioPrefix + "-server-" + protocol }

// serverBattery probes every revision, side by side.
func (p *prober) serverBattery(ctx context.Context, revs []string) []Check {
	out := make([][]Check, len(revs))
	var wg sync.WaitGroup
	for i, rev := range revs {
		wg.Go(func() { out[i] = p.revision(ctx, rev) })
	}
	wg.Wait()
	var all []Check
	for i, cs := range out {
		for _, c := range cs {
			c.Scenario, c.Protocol, c.Condition = serverScenario(revs[i]), revs[i], conditionOf[c.ID]
			all = append(all, c)
		}
	}
	return all
}

// revision probes one revision: first whether the server offers it, then
// its checks side by side.
func (p *prober) revision(ctx context.Context, rev string) []Check {
	var mu sync.Mutex
	var checks []Check
	add := func(cs ...Check) {
		mu.Lock()
		defer mu.Unlock()
		checks = append(checks, cs...)
	}
	var wg sync.WaitGroup
	if p.opts.wants(PartStreamClose) || p.opts.wants(PartReissue) {
		wg.Go(func() { add(p.effectChecks(ctx, rev)...) })
	}
	if !modern(rev) && (p.opts.wants(PartEvents) || p.opts.wants(PartTime) || p.opts.wants(PartUnknown)) {
		wg.Go(func() { add(p.streamChecks(ctx, rev)...) })
	}
	wg.Wait()
	return ordered(checks)
}

// checkOrder is the order of the scorecard's lines.
var checkOrder = []string{
	"revision-offered",
	"retention-events", "retention-seconds", "retention-outlives-session",
	"cursor-evicted-answer", "cursor-unknown-answer",
	"session-idle-ttl", "session-expired-404",
	"event-ids", "priming-event", "retry-field", "event-ids-per-stream", "resume-replays-missed",
	"stream-close-cancels", "stream-close-not-cancelled", "result-after-cut-kept",
	"reissue-executes-once",
}

func ordered(cs []Check) []Check {
	rank := map[string]int{}
	for i, id := range checkOrder {
		rank[id] = i
	}
	out := make([]Check, 0, len(cs))
	for _, id := range checkOrder {
		for _, c := range cs {
			if c.ID == id {
				out = append(out, c)
			}
		}
	}
	for _, c := range cs {
		if _, known := rank[c.ID]; !known {
			out = append(out, c)
		}
	}
	return out
}

// calibration is what a run of the stream call without faults showed.
type calibration struct {
	outcome  *lab.Outcome
	call     lab.Call
	events   int64         // progress events on the call's own stream
	every    time.Duration // their mean spacing, at run scale
	protocol string
	offered  bool
	why      string // why the event checks cannot run, when they cannot
}

// calibrate runs the stream call alone and reads how many events it sends
// on its stream and how fast.
func (p *prober) calibrate(ctx context.Context, rev, label string, stream lab.Call) (*calibration, error) {
	x := p.experiment("probe-"+rev+"-"+label, fmt.Sprintf("The stream call %s at %s with no fault: how many progress events its stream carries, and how fast.", stream.Tool, rev),
		rev, []lab.Call{stream}, 0)
	o, err := p.run(ctx, x)
	if err != nil {
		return nil, err
	}
	c := &calibration{outcome: o, call: stream}
	if why := harnessFailed(o); why != "" {
		c.why = why
		return c, nil
	}
	server := view(o.Wire, wire.EdgeServer)
	call, msg := server.firstCall(stream.Tool)
	if call == nil {
		c.why = fmt.Sprintf("no tools/call of %s reached the server (verdict %s)", stream.Tool, o.Verdict.Verdict)
		return c, nil
	}
	c.protocol = server.negotiated(call.session())
	c.offered = c.protocol == rev
	if !c.offered {
		c.why = fmt.Sprintf("the server answered initialize at %s with %q", rev, c.protocol)
		return c, nil
	}
	var first, last int64
	for _, e := range call.events {
		if _, ok := progressOf(e, token(msg)); ok {
			if c.events == 0 {
				first = e.TUS
			}
			c.events++
			last = e.TUS
		}
	}
	if c.events < 8 {
		c.why = fmt.Sprintf("the stream call's own stream carried %d progress events (at least 8 are needed to cut it and count what was missed)", c.events)
		return c, nil
	}
	c.every = time.Duration((last-first)/(c.events-1)) * time.Microsecond
	return c, nil
}

// streamChecks are the checks that cut a stream of progress events and
// come back with Last-Event-ID: resumption, retention, the answer to an
// unhonourable cursor, and the session's lifetime.
func (p *prober) streamChecks(ctx context.Context, rev string) []Check {
	cal, err := p.calibrate(ctx, rev, "calibrate", p.opts.Server.Stream)
	if err != nil {
		return []Check{cannot("revision-offered", "revision offered", err.Error())}
	}
	if cal.why != "" {
		if cal.protocol != "" && !cal.offered {
			return []Check{verdictOf("revision-offered", "revision offered", false, cal.why, cal.outcome)}
		}
		out := []Check{cannot("revision-offered", "revision offered", cal.why, cal.outcome)}
		if cal.offered {
			out[0] = verdictOf("revision-offered", "revision offered", true, fmt.Sprintf("initialize at %s answered with %s", rev, cal.protocol), cal.outcome)
		}
		for _, id := range []string{"retention-events", "retention-seconds", "cursor-evicted-answer", "session-idle-ttl", "resume-replays-missed"} {
			out = append(out, cannot(id, checkName[id], cal.why, cal.outcome))
		}
		return out
	}
	p.say("[%s] calibrated: %s sends %d progress events, one every %s", rev, p.opts.Server.Stream.Tool, cal.events, cal.every.Round(time.Microsecond))
	// The baseline misses a few events: as many as the tool sends in 50 ms
	// of the run, so that the cut lands before the call ends.
	few := min(max(int64(50*time.Millisecond/max(cal.every, time.Microsecond)), 3), cal.events-3)
	base, err := p.cutAndResume(ctx, rev, cal, "baseline", few, 0)
	if err != nil {
		return []Check{cannot("revision-offered", "revision offered", err.Error())}
	}
	out := []Check{verdictOf("revision-offered", "revision offered", true, fmt.Sprintf("initialize at %s answered with %s", rev, cal.protocol), cal.outcome)}
	out = append(out, p.resumptionChecks(rev, base)...)
	var wg sync.WaitGroup
	var events, timed []Check
	var unknown Check
	if p.opts.wants(PartEvents) {
		wg.Go(func() { events = p.eventSearch(ctx, rev, cal, base) })
	}
	if p.opts.wants(PartTime) {
		wg.Go(func() { timed = p.timeSearch(ctx, rev, cal) })
	}
	if p.opts.wants(PartUnknown) {
		wg.Go(func() {
			var err error
			if unknown, err = p.unknownCursor(ctx, rev); err != nil {
				unknown = cannot("cursor-unknown-answer", checkName["cursor-unknown-answer"], err.Error())
			}
		})
	}
	wg.Wait()
	out = append(out, events...)
	out = append(out, timed...)
	if unknown.ID != "" {
		out = append(out, unknown)
	}
	if p.opts.wants(PartTime) {
		out = append(out, retentionVsSession(out))
	}
	return out
}

// cutAndResume runs the stream call, cuts its stream (a refused partition)
// once missed events remain of it, holds the partition for away (at least
// long enough for the tool to finish: real-world scale, 0 for that alone)
// and reads how the server answered the client's Last-Event-ID.
func (p *prober) cutAndResume(ctx context.Context, rev string, cal *calibration, label string, missed int64, away time.Duration) (*study, error) {
	nth := max(cal.events-missed+1, 2)
	finish := time.Duration(cal.events-nth+1)*cal.every + 200*time.Millisecond
	hold := max(p.real(finish), away)
	call := cal.call
	calls := []lab.Call{call}
	if away > 0 { // a second call after the resume shows whether the session is alive
		calls = append(calls, call)
	}
	x := p.experiment(fmt.Sprintf("probe-%s-%s", rev, label),
		fmt.Sprintf("Cut %s's stream at its event %d of %d and keep the client away %s (real-world), then read the server's answer to its Last-Event-ID.",
			call.Tool, nth, cal.events, hold.Round(time.Millisecond)), rev, calls, hold)
	x.Deadline = lab.Duration(p.wall(hold) + 2*p.wall(callLength(call)) + 20*time.Second)
	x.Faults = []map[string]any{lab.Fault(faults.KindPartition,
		map[string]any{"event": trigger.EventSSEEvent, "tool": call.Tool, "nth": nth}, 0,
		map[string]any{"for": lab.Duration(hold), "mode": "refuse"})}
	o, err := p.run(ctx, x)
	if err != nil {
		return nil, err
	}
	st := studyResume(o, call.Tool)
	p.say("[%s] %s: missed %d, away %s: %s", rev, o.Folder, st.Missed(st.ResultAsEvent), p.real(st.Away()).Round(time.Millisecond), st.Answer)
	return st, nil
}

// hostPort is the host:port of a loopback URL.
func hostPort(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Host
}

// checkName is each check's name on the scorecard.
var checkName = map[string]string{
	"revision-offered":           "revision offered",
	"retention-events":           "retention window, in events",
	"retention-seconds":          "retention window, in time",
	"retention-outlives-session": "retention outlives the idle session",
	"cursor-evicted-answer":      "answer to an evicted Last-Event-ID",
	"cursor-unknown-answer":      "answer to an unknown Last-Event-ID",
	"session-idle-ttl":           "idle session TTL",
	"session-expired-404":        "404 after expiry",
	"event-ids":                  "event ids on the call's stream",
	"priming-event":              "priming event",
	"retry-field":                "retry field",
	"event-ids-per-stream":       "each event id names one event",
	"resume-replays-missed":      "a resumed GET replays exactly the missed events",
	"stream-close-cancels":       "a closed response stream cancels the call",
	"stream-close-not-cancelled": "a closed stream does not cancel the call",
	"result-after-cut-kept":      "a result produced after a cut is kept for a resume",
	"reissue-executes-once":      "a re-issued call executes once",
}

// callLength is the real-world duration a call states (0 when none).
func callLength(c lab.Call) time.Duration {
	d, _ := time.ParseDuration(c.Duration)
	return d
}

// conditionOf groups each server check under its condition.
var conditionOf = map[string]string{
	"revision-offered":           CondRevision,
	"retention-events":           CondRetention,
	"retention-seconds":          CondRetention,
	"retention-outlives-session": CondRetention,
	"cursor-evicted-answer":      CondCursor,
	"cursor-unknown-answer":      CondCursor,
	"session-idle-ttl":           CondSession,
	"session-expired-404":        CondSession,
	"event-ids":                  CondResumption,
	"priming-event":              CondResumption,
	"retry-field":                CondResumption,
	"event-ids-per-stream":       CondResumption,
	"resume-replays-missed":      CondResumption,
	"stream-close-cancels":       CondStreamEnd,
	"stream-close-not-cancelled": CondStreamEnd,
	"result-after-cut-kept":      CondStreamEnd,
	"reissue-executes-once":      CondReissue,
}

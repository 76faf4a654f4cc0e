package probe

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ClientScenario names the client probe's scenario.
const ClientScenario = ScenarioPrefix + "-client"

// Client is a client under test: the experiment's client: mapping.
type Client struct {
	Spec map[string]any
}

func (c Client) describe() string {
	keys := slices.Sorted(maps.Keys(c.Spec))
	out := ""
	for _, k := range keys {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s: %v", k, c.Spec[k])
	}
	return "client {" + out + "}"
}

// chargeFor is the charge every client experiment makes, at real-world
// scale: long enough for a fault to land a third into it.
const chargeFor = 20 * time.Second

// clientExperiment puts the client under test against chaosrun's
// reference server (with server, when given) under faults.
func (p *prober) clientExperiment(name, about string, server map[string]any, calls []lab.Call, faultList ...map[string]any) *lab.Experiment {
	srv := map[string]any{"target": targets.Reference}
	maps.Copy(srv, server)
	return &lab.Experiment{Name: name, Description: about, Seed: p.opts.Seed, TimeScale: p.opts.TimeScale,
		Server: srv, Client: maps.Clone(p.opts.Client.Spec), Workload: lab.Workload{Calls: calls}, Faults: faultList}
}

func chargeCall() lab.Call {
	return lab.Call{Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: lab.Duration(chargeFor)}
}

func midCharge() map[string]any {
	return map[string]any{"event": trigger.EventToolsCall, "tool": mcp.ToolCharge, "after": lab.Duration(chargeFor / 3)}
}

// clientBattery runs the client checks side by side.
func (p *prober) clientBattery(ctx context.Context) []Check {
	type job struct {
		x     *lab.Experiment
		judge func(*lab.Outcome) Check
	}
	jobs := []job{
		{p.clientExperiment("probe-client-restart", "Kill the client a third into a charge; does the restarted process resume the same stream with its persisted Last-Event-ID?",
			nil, []lab.Call{chargeCall()}, lab.Fault(faults.KindCrash, midCharge(), 0, map[string]any{"role": "client"})), judgeRestart},
		{p.clientExperiment("probe-client-reset", "Reset the connection a third into a charge: does the client resume with Last-Event-ID?",
			nil, []lab.Call{chargeCall()}, lab.Fault(faults.KindReset, midCharge(), 0, nil)), judgeResume("client-reset-resumes", "reset → resume with Last-Event-ID")},
		{p.clientExperiment("probe-client-5xx", "Cut the stream a third into a charge and answer 503 for 20 s: does the client keep its session and resume with Last-Event-ID?",
			nil, []lab.Call{chargeCall()},
			lab.Fault(faults.KindHTTPStatus, map[string]any{"event": trigger.EventToolsCall, "tool": mcp.ToolCharge, "after": lab.Duration(chargeFor/3 - time.Second)}, 0,
				map[string]any{"status": 503, "for": "20s"}),
			lab.Fault(faults.KindReset, midCharge(), 0, nil)), judgeResume("client-5xx-resumes", "5xx → resume with Last-Event-ID")},
		{p.clientExperiment("probe-client-404", "Cut the client off a third into a charge and expire its session meanwhile: does it initialize again (for its next call) and report the call's outcome unknown, without calling it again?",
			nil, []lab.Call{chargeCall(), chargeCall()},
			lab.Fault(faults.KindPartition, midCharge(), 0, map[string]any{"for": "20s", "mode": "refuse"}),
			lab.Fault(faults.KindExpireSession, midCharge(), time.Second, nil)), judge404},
		{p.clientExperiment("probe-client-410", "Keep 10 events per session and answer an evicted cursor 410: does the client surface the gap?",
			map[string]any{"retention_events": 10, "on_unresumable": "gone"},
			[]lab.Call{{Tool: mcp.ToolChatty, Args: map[string]any{"events": 200, "interval_ms": 5}, Duration: lab.Duration(p.real(time.Second))}},
			lab.Fault(faults.KindPartition, map[string]any{"event": trigger.EventSSEEvent, "tool": mcp.ToolChatty, "nth": 20}, 0,
				map[string]any{"for": lab.Duration(p.real(2 * time.Second)), "mode": "refuse"})), judge410},
		{p.clientExperiment("probe-client-close", "The server ends the session with a close event a third into a charge: does the client stop?",
			nil, []lab.Call{chargeCall()}, lab.Fault(faults.KindTerminateSession, midCharge(), 0, nil)), judgeClose},
	}
	checks := make([]Check, len(jobs))
	outcomes := make([]*lab.Outcome, len(jobs))
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Go(func() {
			o, err := p.run(ctx, j.x)
			if err != nil {
				checks[i] = cannot(j.x.Name, j.x.Name, err.Error())
				return
			}
			outcomes[i] = o
			c := j.judge(o)
			if why := harnessFailed(o); why != "" {
				c.Status, c.Why, c.Evidence = CannotTell, why, why
			}
			checks[i] = c
			p.say("[client] %s: %s %s", o.Folder, c.Status.Mark(), c.Evidence)
		})
	}
	wg.Wait()
	checks = append(checks, blindRetries(outcomes))
	for i := range checks {
		checks[i].Scenario, checks[i].Condition = ClientScenario, CondClient
	}
	return checks
}

// clientView is what the client did around a fault, from the wire's
// client edge (what the client itself sent and was given).
type clientView struct {
	edge    *edgeView
	call    *exchange
	msg     wire.Message
	session string
	cutUS   int64
}

func clientSide(o *lab.Outcome) *clientView {
	v := &clientView{edge: view(o.Wire, wire.EdgeClient)}
	v.call, v.msg = v.edge.firstCall("")
	if v.call != nil {
		v.session = v.call.session()
	}
	if f, ok := firstFault(o.Faults); ok {
		v.cutUS = f.StartUS
	}
	return v
}

// afterCut lists what the client sent after the fault began.
func (v *clientView) afterCut() []*exchange {
	var out []*exchange
	for _, x := range v.edge.exchanges {
		if x.startUS() >= v.cutUS && (v.call == nil || x.req.N > v.call.req.N) {
			out = append(out, x)
		}
	}
	return out
}

// recalled lists the later tools/call of the same operation (the same
// arguments) as the first.
func (v *clientView) recalled() []*exchange {
	var out []*exchange
	for _, x := range v.afterCut() {
		if m, ok := x.toolCall(v.msg.Tool); ok && m.ArgsDigest == v.msg.ArgsDigest {
			out = append(out, x)
		}
	}
	return out
}

func (v *clientView) firstResume() *exchange {
	for _, x := range v.afterCut() {
		if x.isResume() && x.session() == v.session {
			return x
		}
	}
	return nil
}

func describeNext(xs []*exchange) string {
	if len(xs) == 0 {
		return "it sent nothing more"
	}
	x := xs[0]
	what := x.method()
	for _, m := range x.requestMessages() {
		if m.Method != "" {
			what += " " + m.Method
		}
	}
	if x.lastEventID() != "" {
		what += " with Last-Event-ID " + x.lastEventID()
	}
	return fmt.Sprintf("its next request was %s (wire record %d)", what, x.req.N)
}

func judgeRestart(o *lab.Outcome) Check {
	const id, name = "client-cursor-durable", "cursor persisted across the client's restart"
	v := clientSide(o)
	if v.call == nil {
		return cannot(id, name, "the client made no tools/call", o)
	}
	if r := v.firstResume(); r != nil {
		return verdictOf(id, name, true, fmt.Sprintf("after the restart it resumed session %s with Last-Event-ID %s (wire record %d), answered %s", short(v.session), r.lastEventID(), r.req.N, r.answer()), o)
	}
	ev := "after the restart " + describeNext(v.afterCut())
	if n := len(v.recalled()); n > 0 {
		ev += fmt.Sprintf("; it called %s again %d time(s)", v.msg.Tool, n)
	}
	return verdictOf(id, name, false, ev, o)
}

func short(s string) string {
	if len(s) > 8 {
		return s[:8]
	}
	return s
}

func judgeResume(id, name string) func(*lab.Outcome) Check {
	return func(o *lab.Outcome) Check {
		v := clientSide(o)
		if v.call == nil {
			return cannot(id, name, "the client made no tools/call", o)
		}
		statuses := map[int]int{}
		for _, x := range v.afterCut() {
			statuses[x.status()]++
		}
		if r := v.firstResume(); r != nil {
			ev := fmt.Sprintf("it kept session %s and came back with Last-Event-ID %s (wire record %d)", short(v.session), r.lastEventID(), r.req.N)
			if n := statuses[http.StatusServiceUnavailable]; n > 0 {
				ev = fmt.Sprintf("through %d answers of 503, ", n) + ev
			}
			return verdictOf(id, name, len(v.recalled()) == 0, ev, o)
		}
		ev := describeNext(v.afterCut())
		if n := len(v.recalled()); n > 0 {
			ev += fmt.Sprintf("; it called %s again %d time(s)", v.msg.Tool, n)
		}
		return verdictOf(id, name, false, ev, o)
	}
}

func judge404(o *lab.Outcome) Check {
	const id, name = "client-404-reinitializes", "404 → re-initialize, unknown outcome, no blind retry"
	v := clientSide(o)
	if v.call == nil {
		return cannot(id, name, "the client made no tools/call", o)
	}
	var gone *exchange
	for _, x := range v.afterCut() {
		if x.status() == http.StatusNotFound {
			gone = x
			break
		}
	}
	if gone == nil {
		if n := len(v.recalled()); n > 0 {
			return verdictOf(id, name, false, fmt.Sprintf("it never came back to its session to meet the 404: %s; it called %s again %d time(s)",
				describeNext(v.afterCut()), v.msg.Tool, n), o)
		}
		return cannot(id, name, "the client never met the 404: "+describeNext(v.afterCut()), o)
	}
	reinit := false
	for _, x := range v.edge.after(gone, "", func(*exchange) bool { return true }) {
		for _, m := range x.requestMessages() {
			reinit = reinit || m.Method == mcp.MethodInitialize
		}
	}
	recalled := len(v.recalled())
	unknown := outcomeOf(o.History, history.KindUnknown)
	ev := fmt.Sprintf("after 404 (wire record %d) it initialized again: %s; called %s again: %d time(s)", gone.resp.N, yesNo(reinit), v.msg.Tool, recalled)
	switch {
	case len(o.History) == 0:
		ev += "; what it reported of the call is not on the wire"
	case unknown:
		ev += "; the call was reported unknown"
	default:
		ev += "; the call was not reported unknown"
	}
	return verdictOf(id, name, reinit && recalled == 0 && (unknown || len(o.History) == 0), ev, o)
}

// outcomeOf reports whether the history ends the first call with kind.
func outcomeOf(h []history.Record, kind history.Kind) bool {
	for _, r := range h {
		if r.Kind.IsOutcome() {
			return r.Kind == kind
		}
	}
	return false
}

func judge410(o *lab.Outcome) Check {
	const id, name = "client-410-gap-surfaced", "409/410 → gap surfaced"
	v := clientSide(o)
	var gone *exchange
	for _, x := range v.afterCut() {
		if x.status() == http.StatusGone || x.status() == http.StatusConflict {
			gone = x
			break
		}
	}
	if gone == nil {
		ev := "it never came back with Last-Event-ID to meet the 410: " + describeNext(v.afterCut())
		return verdictOf(id, name, false, ev, o)
	}
	next := v.edge.after(gone, "", func(*exchange) bool { return true })
	ev := fmt.Sprintf("answered %s (wire record %d); %s", gone.answer(), gone.resp.N, describeNext(next))
	if len(o.History) == 0 {
		return cannot(id, name, ev+"; whether it told its caller of the gap is not on the wire", o)
	}
	gaps := 0
	for _, r := range o.History {
		if r.Kind == history.KindGap {
			gaps++
		}
	}
	if o.Verdict != nil && o.Verdict.Figures.EventsLostSilent > 0 {
		ev += fmt.Sprintf("; %d events lost silently", o.Verdict.Figures.EventsLostSilent)
	}
	return verdictOf(id, name, gaps > 0 && (o.Verdict == nil || o.Verdict.Figures.EventsLostSilent == 0), fmt.Sprintf("%s; %d gap(s) surfaced", ev, gaps), o)
}

func judgeClose(o *lab.Outcome) Check {
	const id, name = "client-close-stops", "server close event → stop"
	v := clientSide(o)
	var closeAt *wire.Record
	for _, x := range v.edge.exchanges {
		for _, e := range x.events {
			if e.EventType == "close" && closeAt == nil {
				closeAt = e
			}
		}
	}
	if closeAt == nil {
		return cannot(id, name, "no close event reached the client", o)
	}
	var later []*exchange
	for _, x := range v.edge.exchanges {
		if x.req.N > closeAt.N {
			later = append(later, x)
		}
	}
	recalled := len(v.recalled())
	if len(later) == 0 {
		return verdictOf(id, name, true, fmt.Sprintf("after the close event (wire record %d) it sent nothing more", closeAt.N), o)
	}
	ev := fmt.Sprintf("after the close event (wire record %d) it sent %d more request(s): %s", closeAt.N, len(later), describeNext(later))
	if recalled > 0 {
		ev += fmt.Sprintf("; it called %s again", v.msg.Tool)
	}
	return verdictOf(id, name, false, ev, o)
}

// blindRetries counts, over every client run, the calls retried after an
// unknown outcome or an attempt that reached the server (the checker's
// blind_retries figure).
func blindRetries(outcomes []*lab.Outcome) Check {
	const id, name = "client-blind-retries", "blind retries"
	var n int64
	var judged []*lab.Outcome
	var unproven []string
	for _, o := range outcomes {
		if o != nil && o.Verdict != nil {
			n += o.Verdict.Figures.BlindRetries
			judged = append(judged, o)
			if p, ok := o.Verdict.Provenance["blind_retries"]; ok && p.Kind == check.Unknown {
				unproven = append(unproven, o.Folder+": "+p.Why)
			}
		}
	}
	if len(judged) == 0 {
		return cannot(id, name, "no client run was judged")
	}
	if n == 0 && len(unproven) > 0 {
		return cannot(id, name, "the records cannot count blind retries in "+strings.Join(unproven, "; "), judged...)
	}
	c := verdictOf(id, name, n == 0, fmt.Sprintf("%d blind retries over %d runs (the checker's blind_retries figure)", n, len(judged)), judged...)
	c.Figure = fmt.Sprint(n)
	return c
}

package probe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// effectChecks cut the effect call's stream mid-call (stream close) and
// call it twice with the same arguments (re-issue).
func (p *prober) effectChecks(ctx context.Context, rev string) []Check {
	var out []Check
	if p.opts.wants(PartStreamClose) {
		cut, err := p.cutEffect(ctx, rev)
		if err != nil {
			return []Check{cannot("stream-close-cancels", checkName["stream-close-cancels"], err.Error())}
		}
		out = p.streamClose(rev, cut)
	}
	if !p.opts.wants(PartReissue) && !modern(rev) {
		return out
	}
	again, err := p.reissue(ctx, rev)
	if err != nil {
		return append(out, cannot("reissue-executes-once", checkName["reissue-executes-once"], err.Error()))
	}
	if modern(rev) { // no initialize at 2026-07-28: a call with no fault says whether the revision is served
		out = append(out, p.modernOffered(rev, again))
	}
	if p.opts.wants(PartReissue) {
		out = append(out, p.judgeReissue(again))
	}
	return out
}

// cutEffect resets every connection a third into the effect call.
func (p *prober) cutEffect(ctx context.Context, rev string) (*lab.Outcome, error) {
	e := p.opts.Server.Effect
	d, _ := time.ParseDuration(e.Duration)
	if d <= 0 {
		d = 20 * time.Second
	}
	x := p.experiment("probe-"+rev+"-stream-close",
		fmt.Sprintf("Reset the connection a third into %s at %s: is the call cancelled, and is its result kept for a resume?", e.Tool, rev), rev, []lab.Call{e}, d)
	x.Faults = []map[string]any{lab.Fault(faults.KindReset,
		map[string]any{"event": trigger.EventToolsCall, "tool": e.Tool, "after": lab.Duration(d / 3)}, 0, nil)}
	return p.run(ctx, x)
}

// callRecords returns the ledger records of the effect call's first
// request, and whether the server keeps a ledger at all.
func callRecords(o *lab.Outcome, tool string) (recs []sideeffects.Record, ledger bool, first *exchange) {
	server := view(o.Wire, wire.EdgeServer)
	call, msg := server.firstCall(tool)
	if call == nil {
		return nil, len(o.Ledger) > 0, nil
	}
	for _, r := range o.Ledger {
		if r.RequestID == msg.ID && (call.session() == "" || r.Session == call.session()) {
			recs = append(recs, r)
		}
	}
	return recs, len(o.Ledger) > 0, call
}

func hasKind(recs []sideeffects.Record, k sideeffects.Kind) (sideeffects.Record, bool) {
	for _, r := range recs {
		if r.Kind == k {
			return r, true
		}
	}
	return sideeffects.Record{}, false
}

// streamClose judges the cut effect call: at 2026-07-28 a closed response
// stream must cancel the call; at the session revisions it must not, and
// the result must wait in the stream's log for a resume.
func (p *prober) streamClose(rev string, o *lab.Outcome) []Check {
	tool := p.opts.Server.Effect.Tool
	if why := harnessFailed(o); why != "" {
		return []Check{cannot("stream-close-cancels", checkName["stream-close-cancels"], why, o)}
	}
	recs, ledger, call := callRecords(o, tool)
	if call == nil {
		return []Check{cannot("stream-close-cancels", checkName["stream-close-cancels"], "no tools/call of "+tool+" reached the server", o)}
	}
	cancelled, wasCancelled := hasKind(recs, sideeffects.KindCallCancelled)
	finished, ranOn := hasKind(recs, sideeffects.KindCharge)
	if !ranOn {
		if f, ok := hasKind(recs, sideeffects.KindCallFinished); ok && !f.IsError {
			finished, ranOn = f, true
		}
	}
	s := studyResume(o, tool)
	if modern(rev) {
		const id = "stream-close-cancels"
		switch {
		case wasCancelled:
			return []Check{verdictOf(id, checkName[id], true, fmt.Sprintf("ledger n=%d: call_cancelled at %.3fs, when the stream closed", cancelled.N, sec(cancelled.TUS)), o)}
		case ranOn:
			return []Check{verdictOf(id, checkName[id], false, fmt.Sprintf("ledger n=%d: the call ran on after its stream closed (%s at %.3fs, no call_cancelled)", finished.N, finished.Kind, sec(finished.TUS)), o)}
		case ledger:
			return []Check{cannot(id, checkName[id], "the server's ledger shows neither a cancellation nor the call's end", o)}
		}
		return []Check{cannot(id, checkName[id], "the wire carries nothing of a call after its stream closed, and the server keeps no ledger that would say whether it ran on", o)}
	}
	const notID, keptID = "stream-close-not-cancelled", "result-after-cut-kept"
	var out []Check
	switch {
	case wasCancelled:
		out = append(out, verdictOf(notID, checkName[notID], false, fmt.Sprintf("ledger n=%d: call_cancelled when the stream closed", cancelled.N), o))
	case s.ResultReplayed:
		out = append(out, verdictOf(notID, checkName[notID], true, "the call ran to its end: its result was replayed on the resume ("+s.Evidence+")", o))
	case ranOn:
		out = append(out, verdictOf(notID, checkName[notID], true, fmt.Sprintf("ledger n=%d: the call ran to its end (%s) after its stream closed", finished.N, finished.Kind), o))
	default:
		out = append(out, cannot(notID, checkName[notID], "the wire carries nothing of the call after the cut and no result was replayed; the server keeps no ledger that would say", o))
	}
	dropped, wasDropped := hasKind(recs, sideeffects.KindResultDropped)
	switch {
	case s.ResultReplayed:
		out = append(out, verdictOf(keptID, checkName[keptID], true, s.Evidence+", carrying "+s.describeReplay(), o))
	case wasDropped:
		out = append(out, verdictOf(keptID, checkName[keptID], false, fmt.Sprintf("ledger n=%d: result_dropped (%s)", dropped.N, dropped.Reason), o))
	case s.Class == noResume && !carriesIDs(call):
		out = append(out, verdictOf(keptID, checkName[keptID], false, fmt.Sprintf("the call's stream (wire record %d) carried no event id before the cut: there is nothing to resume, and the result went nowhere", call.req.N), o))
	case s.Class == noResume && jsonAnswer(call):
		out = append(out, verdictOf(keptID, checkName[keptID], false, fmt.Sprintf("the call was answered as %s with no event id (wire record %d): there is no stream to resume, and the result went nowhere", call.resp.Header.ContentType, call.resp.N), o))
	case s.Class == noResume:
		out = append(out, cannot(keptID, checkName[keptID], s.Answer, o))
	default:
		out = append(out, verdictOf(keptID, checkName[keptID], false, s.Evidence+", carrying "+s.describeReplay(), o))
	}
	return out
}

func jsonAnswer(x *exchange) bool {
	return x.resp != nil && x.resp.Header != nil && strings.Contains(x.resp.Header.ContentType, "json")
}

func sec(us int64) float64 { return float64(us) / 1e6 }

// reissue calls the effect tool twice with the same arguments (and the
// same idempotency key, where the tool takes one).
func (p *prober) reissue(ctx context.Context, rev string) (*lab.Outcome, error) {
	e := p.opts.Server.Effect.Clone()
	for k, v := range e.Args {
		if s, ok := v.(string); ok {
			e.Args[k] = strings.NewReplacer(workload.PlaceholderCall, "reissue", workload.PlaceholderClient, "probe").Replace(s)
		}
	}
	if e.Tool == mcp.ToolCharge {
		e.Args["order_id"], e.Args["idempotency_key"] = "probe-reissue", "probe-reissue-key"
	}
	x := p.experiment("probe-"+rev+"-reissue",
		fmt.Sprintf("Call %s twice with the same arguments at %s: does the server execute it twice?", e.Tool, rev), rev, []lab.Call{e, e}, 0)
	o, err := p.run(ctx, x)
	if err != nil {
		return nil, err
	}
	return o, nil
}

// judgeReissue reads the re-issue run.
func (p *prober) judgeReissue(o *lab.Outcome) Check {
	const id = "reissue-executes-once"
	if why := harnessFailed(o); why != "" {
		return cannot(id, checkName[id], why, o)
	}
	tool := p.opts.Server.Effect.Tool
	calls := view(o.Wire, wire.EdgeServer).calls(tool)
	if len(calls) < 2 {
		return cannot(id, checkName[id], fmt.Sprintf("%d tools/call of %s reached the server, not two", len(calls), tool), o)
	}
	var charges, dedup []sideeffects.Record
	for _, r := range o.Ledger {
		switch r.Kind {
		case sideeffects.KindCharge:
			charges = append(charges, r)
		case sideeffects.KindChargeDeduplicated:
			dedup = append(dedup, r)
		}
	}
	if len(o.Ledger) > 0 && len(charges)+len(dedup) > 0 {
		ev := fmt.Sprintf("two calls reached the server; the ledger holds %d charge and %d charge_deduplicated records", len(charges), len(dedup))
		return verdictOf(id, checkName[id], len(charges) == 1, ev, o)
	}
	second := calls[1]
	m, _ := second.toolCall(tool)
	refusedAgain := second.status() >= 400
	for _, r := range append([]*wire.Record{second.resp}, second.events...) {
		if r != nil && carriesResult(r, m.ID) && resultIsError(r, m.ID) {
			refusedAgain = true
		}
	}
	if refusedAgain {
		return verdictOf(id, checkName[id], true, fmt.Sprintf("the second call was refused (wire record %d): %s", second.req.N, second.answer()), o)
	}
	return cannot(id, checkName[id], "both calls reached the server and were answered without an error; only the server's own records (a ledger) can say whether the side effect ran twice", o)
}

// modernOffered says whether the server served the effect call at
// 2026-07-28.
func (p *prober) modernOffered(rev string, o *lab.Outcome) Check {
	const id = "revision-offered"
	if why := harnessFailed(o); why != "" {
		return cannot(id, checkName[id], why, o)
	}
	call, _ := view(o.Wire, wire.EdgeServer).firstCall(p.opts.Server.Effect.Tool)
	if call == nil {
		return verdictOf(id, checkName[id], false, "no tools/call at "+rev+" reached the server", o)
	}
	ok := call.protocolHeader() == rev && call.status() < 300 && call.status() > 0
	return verdictOf(id, checkName[id], ok, fmt.Sprintf("a tools/call with MCP-Protocol-Version %s was answered %s (wire record %d)", call.protocolHeader(), call.answer(), call.req.N), o)
}

// carriesIDs reports whether any event of the exchange carried an id.
func carriesIDs(x *exchange) bool {
	for _, e := range x.events {
		if e.EventID != "" {
			return true
		}
	}
	return false
}

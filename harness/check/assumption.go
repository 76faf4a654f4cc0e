package check

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/targets/history"
)

// streamBreak is a moment a client's stream broke: a stream_break, or a
// restart of a crashed client. A restart is a client_start with detail
// "restarted...", or any client_start of a client that had started before:
// a client whose cursor lived in memory cannot know it ran before and
// reports itself "fresh".
type streamBreak struct {
	tus  int64
	line int
	what string
}

// BreakGrace is how long after a fault's window ends a stream break still
// counts as the fault's doing: a one-shot fault (a reset, a crash) ends
// about when it acts, and a client notices a dead stream only when it next
// reads. A break later than that is the client's own, and proves nothing
// about the fault.
const BreakGrace = 5 * time.Second

// faultHit checks the assumption: some fault that was injected without error
// has a window [start_us, end_us] overlapping a call in flight (from its
// first invoke to its outcome, or to the end of the run if it has none), and
// that call's client saw its stream break during the call, inside the
// fault's window or within BreakGrace after it; or a connection of a client
// judged from the wire was cut before its request crossed, inside that
// window: a request it made failed under the fault.
func faultHit(in Input, order []int, calls []Call, lines historyLines) Result {
	breaks := breaksOf(in.History, order, in.ClientExit)
	var ev evidence
	var injected, overlapping, hit int
	for i := range in.Faults {
		f := &in.Faults[i]
		if f.Error != "" {
			ev.add("%s: not counted, the injection failed: %s", describe(f, i+1), f.Error)
			continue
		}
		injected++
		overlaps, c, b := faultOnCalls(f, calls, breaks)
		cut := cutInWindow(in.History, f)
		switch {
		case b == nil && cut > 0:
			hit++
			ev.add("%s cut a connection of the client's before its request crossed (%s): a request it made failed under the fault, though which call the wire cannot say",
				describe(f, i+1), lines.many(cut))
		case b != nil:
			hit++
			where := citation{text: ClientExitFile, refs: []Ref{{File: RefExit}}}
			if b.line > 0 {
				where = lines.many(b.line)
			}
			ev.add("%s hit call %s of %s (%s): %s %s at %s",
				describe(f, i+1), c.ID, c.Client, lines.many(c.First), where, b.what, seconds(b.tus))
		case overlaps > 0:
			overlapping++
			ev.add("%s overlapped %s in flight (first: call %s of %s, %s), but no client's stream broke during them",
				describe(f, i+1), count(overlaps, "call"), c.ID, c.Client, lines.many(c.First))
		default:
			ev.add("%s overlapped no call in flight", describe(f, i+1))
		}
	}
	var summary string
	switch {
	case hit > 0:
		summary = fmt.Sprintf("%d of %d faults hit a call in flight and broke its client's stream", hit, injected)
	case injected == 0:
		summary = "no fault was injected without error"
	case overlapping > 0:
		summary = "faults overlapped calls in flight, but no client saw its stream break: the fault did not bite"
	default:
		summary = "no fault window overlapped a call in flight"
	}
	return ev.result(FaultHit, hit > 0, summary)
}

// cutInWindow returns the line of the first break of no call in the
// history (a connection of a client judged from the wire that the fault's
// side cut before any request crossed it: tohistory.go) inside the fault's
// window or within BreakGrace after it, or 0.
func cutInWindow(hist []history.Record, f *faults.Entry) int {
	end := f.EndUS
	if end < f.StartUS {
		end = math.MaxInt64
	} else {
		end += BreakGrace.Microseconds()
	}
	for i := range hist {
		h := &hist[i]
		if h.Kind == history.KindStreamBreak && h.Call == "" && h.RequestID == "" && h.TUS >= f.StartUS && h.TUS <= end {
			return i + 1
		}
	}
	return 0
}

// faultOnCalls returns how many calls the fault's window overlaps and the
// first call it hit with the break that proves it, or, when it hit none, the
// first call it overlapped and a nil break.
func faultOnCalls(f *faults.Entry, calls []Call, breaks map[string][]streamBreak) (int, *Call, *streamBreak) {
	fEnd := f.EndUS
	if fEnd < f.StartUS {
		fEnd = math.MaxInt64 // still active when the run ended
	}
	overlaps := 0
	var first *Call
	for i := range calls {
		c := &calls[i]
		cEnd := int64(math.MaxInt64)
		if c.Resolved() {
			cEnd = c.EndUS
		}
		if f.StartUS > cEnd || fEnd < c.StartUS {
			continue
		}
		overlaps++
		if first == nil {
			first = c
		}
		to := cEnd
		if fEnd != math.MaxInt64 {
			to = min(cEnd, fEnd+BreakGrace.Microseconds())
		}
		if b := firstBreak(breaks[c.Client], max(c.StartUS, f.StartUS), to); b != nil {
			return overlaps, c, b
		}
	}
	return overlaps, first, nil
}

// firstBreak returns the first break in [from, to], or nil.
func firstBreak(bs []streamBreak, from, to int64) *streamBreak {
	i := sort.Search(len(bs), func(i int) bool { return bs[i].tus >= from })
	if i < len(bs) && bs[i].tus <= to {
		return &bs[i]
	}
	return nil
}

// breaksByClient lists each client's stream breaks in time order; order is
// the history's time order.
func breaksByClient(hist []history.Record, order []int) map[string][]streamBreak {
	return breaksOf(hist, order, nil)
}

// breaksOf is breaksByClient, with the death of a client of the user's own
// (exit, when it exited with an error) as a break of every logical client
// it played: a fault that kills the client hits its calls.
func breaksOf(hist []history.Record, order []int, exit *ClientExit) map[string][]streamBreak {
	out := breaksFromHistory(hist, order)
	if exit == nil || exit.Stopped || exit.Code == 0 || exit.TUS == 0 {
		return out
	}
	for i := range hist {
		c := hist[i].Client
		if bs := out[c]; len(bs) == 0 || bs[len(bs)-1].what != "client exited" {
			out[c] = append(out[c], streamBreak{tus: exit.TUS, what: "client exited"})
		}
	}
	for c, bs := range out {
		slices.SortStableFunc(bs, func(a, b streamBreak) int { return cmp.Compare(a.tus, b.tus) })
		out[c] = bs
	}
	return out
}

// breaksFromHistory lists the breaks the history records.
func breaksFromHistory(hist []history.Record, order []int) map[string][]streamBreak {
	out := map[string][]streamBreak{}
	started := map[string]bool{}
	for _, i := range order {
		h := &hist[i]
		var what string
		switch {
		case h.Kind == history.KindStreamBreak:
			what = "stream_break " + h.Reason
		case h.Kind == history.KindClientStart:
			again := started[h.Client]
			started[h.Client] = true
			if !again && !strings.HasPrefix(h.Detail, "restarted") {
				continue
			}
			what = "client_start " + h.Detail
		default:
			continue
		}
		out[h.Client] = append(out[h.Client], streamBreak{tus: h.TUS, line: i + 1, what: strings.TrimSpace(what)})
	}
	return out
}

// describe names a fault entry, the line-th of the fault log: its place in
// the experiment, repeat, kind, target and window.
func describe(f *faults.Entry, line int) citation {
	return citation{text: describeText(f), refs: []Ref{{File: RefFaults, N: int64(line)}}}
}

// describeText is describe's text.
func describeText(f *faults.Entry) string {
	repeat := ""
	if f.Repeat > 0 {
		repeat = fmt.Sprintf(" repeat %d", f.Repeat)
	}
	return fmt.Sprintf("fault %d%s (%s on %s, %s)", f.Index, repeat, f.Kind, f.Target, window(f))
}

func window(f *faults.Entry) string {
	if f.EndUS < f.StartUS {
		return fmt.Sprintf("[%s, end of run]", seconds(f.StartUS))
	}
	return fmt.Sprintf("[%s, %s]", seconds(f.StartUS), seconds(f.EndUS))
}

// answeringFault reports whether a fault that answers for the server, or
// changes what it answers (faults.Effect.Answers), was acting at us
// (BreakGrace included).
func answeringFault(log []faults.Entry, us int64) bool {
	for i := range log {
		f := &log[i]
		if !faults.EffectOf(*f).Answers {
			continue
		}
		end := f.EndUS
		if end < f.StartUS {
			end = math.MaxInt64
		} else {
			end += BreakGrace.Microseconds()
		}
		if f.StartUS <= us && us <= end {
			return true
		}
	}
	return false
}

// WorkloadRan is the first assumption's id: the workload's calls reached
// their tools.
const WorkloadRan = "workload_ran"

// workloadRan checks that the workload could run at all. It does not hold
// when every call ended failed, each on an answer from the server (an
// unknown tool, arguments the tool refuses, a method the server lacks, a
// tool that answers every call with an error): no fault broke it, and no
// fault that answers or changes the server's state (an http_status, a
// restart, an expired session, a balancer) was acting when it failed.
// Faults that only delay or cut bytes (an idle timeout standing from the
// start, say) do not make an answer the server gave; nor does it hold when a client of the user's own exited with an error before
// any fault. Such a run says nothing about faults, whenever the faults
// were injected: it is a workload error, with the server's or the client's
// own words as evidence.
func workloadRan(in Input, calls []Call, lines historyLines) Result {
	var ev evidence
	if why := exitedBeforeFaults(in); why != "" {
		return ev.result(WorkloadRan, false, why+": a workload error (check the client's command and arguments)")
	}
	order := timeOrder(in.History)
	breaks := breaksByClient(in.History, order)
	refused := 0
	for _, c := range calls {
		if c.Outcome != history.KindFail || in.History[c.Last-1].Result != history.ResultRead ||
			firstBreak(breaks[c.Client], c.StartUS, c.EndUS) != nil || answeringFault(in.Faults, c.EndUS) {
			return ev.result(WorkloadRan, true, fmt.Sprintf("%s reached the server's tools", count(len(calls), "call")))
		}
		refused++
	}
	if refused == 0 {
		return ev.result(WorkloadRan, true, "no call was made")
	}
	seen := map[string]bool{}
	for i := range in.History {
		h := &in.History[i]
		if h.Kind != history.KindFail || h.Result != history.ResultRead {
			continue
		}
		why := cmp.Or(h.Reason, "the tool answered with an error result (isError)")
		if !seen[why] {
			seen[why] = true
			ev.add("%s: call %s of %s failed: %s", lines.many(i+1), h.Call, h.Client, why)
		}
	}
	return ev.result(WorkloadRan, false, fmt.Sprintf("every one of %s was answered with an error, and no fault broke any: a workload error (check the tools and arguments)",
		count(len(calls), "call")))
}

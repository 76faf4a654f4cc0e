package check

import (
	"fmt"
	"math"
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
// fault's window or within BreakGrace after it.
func faultHit(in Input, order []int, calls []Call, lines historyLines) Result {
	breaks := breaksByClient(in.History, order)
	var ev evidence
	var injected, overlapping, hit int
	for i := range in.Faults {
		f := &in.Faults[i]
		if f.Error != "" {
			ev.add("%s: not counted, the injection failed: %s", describe(f), f.Error)
			continue
		}
		injected++
		overlaps, c, b := faultOnCalls(f, calls, breaks)
		switch {
		case b != nil:
			hit++
			ev.add("%s hit call %s of %s (%s): %s %s at %s",
				describe(f), c.ID, c.Client, lines.many(c.First), lines.many(b.line), b.what, seconds(b.tus))
		case overlaps > 0:
			overlapping++
			ev.add("%s overlapped %s in flight (first: call %s of %s, %s), but no client's stream broke during them",
				describe(f), count(overlaps, "call"), c.ID, c.Client, lines.many(c.First))
		default:
			ev.add("%s overlapped no call in flight", describe(f))
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

// describe names a fault entry: its place in the experiment, repeat, kind,
// target and window.
func describe(f *faults.Entry) string {
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

// WorkloadRan is the first assumption's id: the workload's calls reached
// their tools.
const WorkloadRan = "workload_ran"

// workloadRan checks that the workload could run at all: it does not hold
// when some call was answered with an error before any fault was injected
// and no call ever succeeded or reached an unknown outcome — an unknown
// tool, arguments the tool refuses, a method the server lacks. Such a run
// says nothing about faults; it is a workload error, with the server's own
// words as evidence.
func workloadRan(in Input, calls []Call, lines historyLines) Result {
	var ev evidence
	firstFault := int64(math.MaxInt64)
	for _, f := range in.Faults {
		if f.Error == "" {
			firstFault = min(firstFault, f.StartUS)
		}
	}
	failedEarly, other := 0, 0
	for _, c := range calls {
		if c.Outcome == history.KindFail && c.EndUS < firstFault {
			failedEarly++
			continue
		}
		other++
	}
	if failedEarly == 0 || other > 0 {
		return ev.result(WorkloadRan, true, fmt.Sprintf("%s reached the server's tools", count(len(calls), "call")))
	}
	seen := map[string]bool{}
	for i := range in.History {
		h := &in.History[i]
		if h.Kind == history.KindFail && h.Result == history.ResultRead && !seen[h.Reason] {
			seen[h.Reason] = true
			ev.add("%s: call %s of %s failed: %s", lines.many(i+1), h.Call, h.Client, h.Reason)
		}
	}
	return ev.result(WorkloadRan, false, fmt.Sprintf("every one of %s failed before any fault: a workload error (check the tools and arguments)",
		count(len(calls), "call")))
}

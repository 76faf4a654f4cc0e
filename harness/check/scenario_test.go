package check

import (
	"fmt"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// run builds a hand-written experiment record: ledger, history and faults on
// one clock, which [run.at] moves forward.
type run struct {
	now int64
	in  Input
}

func newRun() *run { return &run{} }

// at sets the clock to sec seconds into the run.
func (r *run) at(sec float64) *run {
	r.now = int64(sec * 1e6)
	return r
}

func (r *run) led(rec sideeffects.Record) *run {
	rec.N = int64(len(r.in.Ledger) + 1)
	rec.ID = fmt.Sprintf("rec-%d", rec.N)
	rec.TUS = r.now
	rec.Source = "server"
	r.in.Ledger = append(r.in.Ledger, rec)
	return r
}

func (r *run) hist(h history.Record) *run {
	h.TUS = r.now
	if h.Client == "" {
		h.Client = "c1"
	}
	r.in.History = append(r.in.History, h)
	return r
}

func (r *run) fault(kind, target string, start, end float64) *run {
	r.in.Faults = append(r.in.Faults, faults.Entry{
		Index: len(r.in.Faults), Kind: kind, Target: target,
		StartUS: int64(start * 1e6), EndUS: int64(end * 1e6),
	})
	return r
}

func (r *run) timings(wall, scheduled time.Duration) *run {
	r.in.Wall, r.in.Scheduled = wall, scheduled
	return r
}

// Server-side observations.

func (r *run) opened(session, client string) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: session, Client: client, Detail: "2025-11-25"})
}

func (r *run) closed(session, reason string) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: session, Reason: reason})
}

func (r *run) started(session, client, req, tool, order string) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindCallStarted, Session: session, Client: client, RequestID: req, Tool: tool, OrderID: order})
}

func (r *run) charged(session, client, req, order string) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindCharge, Session: session, Client: client, RequestID: req, OrderID: order, AmountCents: 4999})
}

func (r *run) emitted(session, req string, eventID, seq int64) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: session, RequestID: req, Stream: req, EventID: eventID, Seq: seq})
}

func (r *run) written(session, req string, eventID int64) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: session, RequestID: req, Stream: req, EventID: eventID})
}

// Client-side history.

func (r *run) clientStart(client, detail string) *run {
	return r.hist(history.Record{Kind: history.KindClientStart, Client: client, Target: "test", Detail: detail})
}

func (r *run) sessionNew(client, session string) *run {
	return r.hist(history.Record{Kind: history.KindSessionNew, Client: client, Session: session, Protocol: "2025-11-25"})
}

func (r *run) invoke(client, call, tool, session, req string, attempt int) *run {
	return r.hist(history.Record{Kind: history.KindInvoke, Client: client, Call: call, OrderID: call, Tool: tool, Session: session, RequestID: req, Attempt: attempt})
}

func (r *run) outcome(kind history.Kind, client, call, session, req string, eventID int64) *run {
	return r.hist(history.Record{Kind: kind, Client: client, Call: call, OrderID: call, Session: session, RequestID: req, EventID: eventID})
}

func (r *run) event(client, call, session, req string, eventID, seq int64) *run {
	return r.hist(history.Record{Kind: history.KindEvent, Client: client, Call: call, Session: session, RequestID: req, EventID: eventID, Seq: seq, Detail: "notifications/progress"})
}

func (r *run) broke(client, call, session, req, reason string) *run {
	return r.hist(history.Record{Kind: history.KindStreamBreak, Client: client, Call: call, Session: session, RequestID: req, Reason: reason})
}

func (r *run) reconnect(client, call, session, req string, lastEventID int64, result string) *run {
	return r.hist(history.Record{Kind: history.KindReconnect, Client: client, Call: call, Session: session, RequestID: req, LastEventID: lastEventID, Result: result})
}

func (r *run) resume(client, call, session, req string, lastEventID int64) *run {
	return r.hist(history.Record{Kind: history.KindResume, Client: client, Call: call, Session: session, RequestID: req, LastEventID: lastEventID})
}

func (r *run) gap(client, call, session, req string, from, to int64) *run {
	return r.hist(history.Record{Kind: history.KindGap, Client: client, Call: call, Session: session, RequestID: req, FromEventID: from, ToEventID: to, Reason: "resume_window_exceeded"})
}

// The scenarios below are the experiments of the library, written by hand
// at their real-world times.

// doubleChargeNaive: a 60s LB idle timeout cuts the stream of a 90s charge;
// the naive client drops its session, initializes again and charges again.
func doubleChargeNaive() Input {
	r := newRun().fault("idle_timeout", "proxy", 0, 150.5).timings(8*time.Second, 7500*time.Millisecond)
	r.in.Faults[0].Params = map[string]any{"idle": "60s", "close": "reset"}
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(60.1).broke("c1", "pay-1", "sA", "2", "reset")
	r.at(60.2).opened("sB", "c1").sessionNew("c1", "sB")
	r.at(60.3).invoke("c1", "pay-1", "charge", "sB", "2", 2).started("sB", "c1", "2", "charge", "pay-1")
	r.at(90.1).charged("sA", "c1", "2", "pay-1").written("sA", "2", 4)
	r.at(150.3).charged("sB", "c1", "2", "pay-1").written("sB", "2", 2)
	r.at(150.4).outcome(history.KindOK, "c1", "pay-1", "sB", "2", 2)
	return r.in
}

// doubleChargeResumable: the same cut; the resumable client reconnects with
// Last-Event-ID and receives the original result once.
func doubleChargeResumable() Input {
	r := newRun().fault("idle_timeout", "proxy", 0, 90.5).timings(5*time.Second, 4600*time.Millisecond)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(60.1).broke("c1", "pay-1", "sA", "2", "reset")
	r.at(61.1).reconnect("c1", "pay-1", "sA", "2", 3, "ok").resume("c1", "pay-1", "sA", "2", 3)
	r.at(90.1).charged("sA", "c1", "2", "pay-1").written("sA", "2", 4)
	r.at(90.2).outcome(history.KindOK, "c1", "pay-1", "sA", "2", 4)
	return r.in
}

// evictedResume: a chatty tool emits 50 events; a partition from 10s to 250s
// outlasts the 100-event buffer, so the resume at event 12 is unhonourable.
// With silentHead the server resumes at head and the client sees no error;
// otherwise it answers 410 and the client surfaces the gap.
func evictedResume(silentHead bool) Input {
	r := newRun().fault("partition", "proxy", 10, 250).timings(15*time.Second, 13*time.Second)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "chat-1", "chatty", "sA", "2", 1).started("sA", "c1", "2", "chatty", "chat-1")
	for seq := int64(1); seq <= 50; seq++ {
		r.at(float64(seq)*6).emitted("sA", "2", seq+1, seq)
		if seq <= 1 || seq >= 42 {
			r.event("c1", "chat-1", "sA", "2", seq+1, seq)
		}
		if seq == 1 {
			r.at(10).broke("c1", "chat-1", "sA", "2", "timeout")
			r.at(20).reconnect("c1", "chat-1", "sA", "2", 2, "error")
		}
		if seq == 41 {
			r.at(250.5)
			if silentHead {
				r.reconnect("c1", "chat-1", "sA", "2", 2, "ok").resume("c1", "chat-1", "sA", "2", 2)
			} else {
				r.reconnect("c1", "chat-1", "sA", "2", 2, "status_410").gap("c1", "chat-1", "sA", "2", 2, 42)
				r.reconnect("c1", "chat-1", "sA", "2", 42, "ok").resume("c1", "chat-1", "sA", "2", 42)
			}
		}
	}
	r.at(300.1).written("sA", "2", 52).outcome(history.KindOK, "c1", "chat-1", "sA", "2", 52)
	return r.in
}

// keepaliveMissed: the server's keepalive is shorter than the LB idle
// timeout, so the fault is active for the whole call and never cuts it.
func keepaliveMissed() Input {
	r := newRun().fault("idle_timeout", "proxy", 0, 90.5).timings(5*time.Second, 4600*time.Millisecond)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(90.1).charged("sA", "c1", "2", "pay-1").written("sA", "2", 3)
	r.at(90.2).outcome(history.KindOK, "c1", "pay-1", "sA", "2", 3)
	return r.in
}

// sessionExpiredUnknown: a partition outlasts the session TTL; the resumable
// client's reconnect gets 404, it starts a new session and marks the charge
// unknown without retrying it. The old session's result is dropped.
func sessionExpiredUnknown() Input {
	r := newRun().fault("partition", "proxy", 30, 700).timings(20*time.Second, 18*time.Second)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "pay-1", "charge", "sA", "2", 1).started("sA", "c1", "2", "charge", "pay-1")
	r.at(31).broke("c1", "pay-1", "sA", "2", "timeout")
	r.at(90.1).charged("sA", "c1", "2", "pay-1")
	r.at(630).closed("sA", "expired")
	r.at(630.1).led(sideeffects.Record{Kind: sideeffects.KindResultDropped, Session: "sA", RequestID: "2", Reason: "session expired"})
	r.at(700.5).reconnect("c1", "pay-1", "sA", "2", 1, "status_404")
	r.hist(history.Record{Kind: history.KindSessionLost, Client: "c1", Session: "sA", Reason: "status_404"})
	r.at(700.6).opened("sB", "c1").sessionNew("c1", "sB")
	r.hist(history.Record{Kind: history.KindUnknown, Client: "c1", Call: "pay-1", OrderID: "pay-1", Session: "sA", RequestID: "2", Reason: "session lost"})
	return r.in
}

// clientCrashMemoryCursor: the client is SIGKILLed mid-chatty and restarted
// with a memory cursor: it cannot resume, so it opens a second session while
// the first is live and calls again; the first stream's result is orphaned.
func clientCrashMemoryCursor() Input {
	r := newRun().fault("crash", "client", 20, 21).timings(10*time.Second, 9*time.Second)
	r.at(0).clientStart("c1", "fresh").opened("sA", "c1").sessionNew("c1", "sA")
	r.at(0.1).invoke("c1", "chat-1", "chatty", "sA", "2", 1).started("sA", "c1", "2", "chatty", "chat-1")
	for seq := int64(1); seq <= 3; seq++ {
		r.at(float64(seq)*6).emitted("sA", "2", seq+1, seq).event("c1", "chat-1", "sA", "2", seq+1, seq)
	}
	r.at(21.5).clientStart("c1", "fresh") // its cursor died with it: it cannot know it ran before
	r.at(21.6).opened("sB", "c1").sessionNew("c1", "sB")
	r.at(21.7).invoke("c1", "chat-1", "chatty", "sB", "2", 1).started("sB", "c1", "2", "chatty", "chat-1")
	r.at(24).emitted("sA", "2", 5, 4)
	r.at(27.7).emitted("sB", "2", 2, 1).event("c1", "chat-1", "sB", "2", 2, 1)
	r.at(30).emitted("sA", "2", 6, 5)
	r.at(31).written("sA", "2", 7)
	for seq := int64(2); seq <= 5; seq++ {
		r.at(21.7+float64(seq)*6).emitted("sB", "2", seq+1, seq).event("c1", "chat-1", "sB", "2", seq+1, seq)
	}
	r.at(52).written("sB", "2", 7).outcome(history.KindOK, "c1", "chat-1", "sB", "2", 7)
	return r.in
}

// scenarios are the golden-file cases, by file name.
var scenarios = []struct {
	name  string
	input func() Input
}{
	{"double_charge_naive", doubleChargeNaive},
	{"double_charge_resumable", doubleChargeResumable},
	{"silent_loss_silent_head", func() Input { return evictedResume(true) }},
	{"evicted_resume_gone", func() Input { return evictedResume(false) }},
	{"keepalive_fault_missed", keepaliveMissed},
	{"session_expired_unknown", sessionExpiredUnknown},
	{"client_crash_memory_cursor", clientCrashMemoryCursor},
}

// texts is the text of each evidence line.
func texts(ev []Evidence) []string {
	out := make([]string, len(ev))
	for i, e := range ev {
		out[i] = e.Text
	}
	return out
}

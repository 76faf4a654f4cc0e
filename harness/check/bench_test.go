package check

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// bigRun builds a run of clients×callsEach chatty calls emitting events
// each: one session per client, a partition that breaks every client's
// stream once, and every hundredth call losing two events silently.
func bigRun(clients, callsEach, events int) Input {
	var in Input
	in.Faults = []faults.Entry{{Kind: "partition", Target: "proxy", StartUS: 1000, EndUS: 5000}}
	n := int64(0)
	led := func(r sideeffects.Record) {
		n++
		r.N, r.ID = n, fmt.Sprint(n)
		in.Ledger = append(in.Ledger, r)
	}
	hist := func(h history.Record) { in.History = append(in.History, h) }
	t := int64(0)
	for c := range clients {
		client, session := fmt.Sprint("c", c), fmt.Sprint("s", c)
		led(sideeffects.Record{TUS: t, Kind: sideeffects.KindSessionOpened, Session: session, Client: client})
		hist(history.Record{TUS: t, Client: client, Kind: history.KindSessionNew, Session: session})
		for k := range callsEach {
			call, req := fmt.Sprint(client, "-", k), fmt.Sprint(k+1)
			t++
			hist(history.Record{TUS: t, Client: client, Kind: history.KindInvoke, Call: call, OrderID: call, Tool: "chatty", Session: session, RequestID: req, Attempt: 1})
			led(sideeffects.Record{TUS: t, Kind: sideeffects.KindCallStarted, Tool: "chatty", OrderID: call, Session: session, Client: client, RequestID: req})
			if k == 0 {
				hist(history.Record{TUS: t, Client: client, Kind: history.KindStreamBreak, Call: call, Session: session, RequestID: req, Reason: "reset"})
				hist(history.Record{TUS: t + 1, Client: client, Kind: history.KindResume, Call: call, Session: session, RequestID: req})
			}
			for seq := int64(1); seq <= int64(events); seq++ {
				t++
				led(sideeffects.Record{TUS: t, Kind: sideeffects.KindEventEmitted, Session: session, RequestID: req, Stream: req, EventID: t, Seq: seq})
				if k%100 != 0 || seq > 2 {
					hist(history.Record{TUS: t, Client: client, Kind: history.KindEvent, Call: call, Session: session, RequestID: req, EventID: t, Seq: seq})
				}
			}
			t++
			led(sideeffects.Record{TUS: t, Kind: sideeffects.KindResultWritten, Session: session, RequestID: req, EventID: t})
			hist(history.Record{TUS: t, Client: client, Kind: history.KindOK, Call: call, OrderID: call, Session: session, RequestID: req, EventID: t})
		}
	}
	return in
}

// heapObjects reads the bytes of live and not yet swept heap objects.
func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// BenchmarkJudge judges 100,000 calls and 1,000,000 events, reporting the
// time per judgement, the input's own heap, and the peak heap the judging
// adds on top of it (sampled every millisecond).
func BenchmarkJudge(b *testing.B) {
	in := bigRun(1000, 100, 10)
	runtime.GC()
	base := heapObjects()
	var peak uint64
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			for {
				peak = max(peak, heapObjects())
				select {
				case <-stop:
					return
				case <-tick.C:
				}
			}
		})
		v := Judge(in)
		close(stop)
		wg.Wait()
		if v.Figures.Calls != 100_000 || v.Figures.EventsEmitted != 1_000_000 || v.Figures.EventsLostSilent != 2000 {
			b.Fatalf("unexpected figures %+v", v.Figures)
		}
	}
	b.ReportMetric(float64(base)/(1<<20), "input-heap-MB")
	b.ReportMetric(float64(peak-base)/(1<<20), "peak-extra-heap-MB")
}

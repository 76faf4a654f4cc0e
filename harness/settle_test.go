package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
)

// fakeLedger serves GET /records from a list a test changes while the
// settler polls.
type fakeLedger struct {
	mu      sync.Mutex
	recs    []sideeffects.Record
	fetches atomic.Int64
}

func (l *fakeLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet || r.URL.Path != "/records" {
		http.NotFound(w, r)
		return
	}
	l.fetches.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = sideeffects.WriteLedger(w, l.recs)
}

func (l *fakeLedger) add(recs ...sideeffects.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range recs {
		r.ID = sideeffects.NewID()
		r.N = int64(len(l.recs) + 1)
		l.recs = append(l.recs, r)
	}
}

func started(session, request string, tus int64) sideeffects.Record {
	return sideeffects.Record{Kind: sideeffects.KindCallStarted, Session: session, RequestID: request, Tool: "charge", TUS: tus}
}

func finished(session, request string) sideeffects.Record {
	return sideeffects.Record{Kind: sideeffects.KindCallFinished, Session: session, RequestID: request, Tool: "charge"}
}

// statusAnswering answers /control/status with each of answers in turn,
// then with the last one, and counts the requests.
func statusAnswering(answers ...func(http.ResponseWriter)) (http.Handler, *atomic.Int64) {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1)) - 1
		if r.URL.Path != "/control/status" {
			http.NotFound(w, r)
			return
		}
		answers[min(i, len(answers)-1)](w)
	}), &n
}

func inflightAnswer(n int) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) { fmt.Fprintf(w, `{"sessions":1,"inflight_calls":%d}`, n) }
}

func notFound(w http.ResponseWriter) { http.Error(w, "404 page not found", http.StatusNotFound) }

// settleRig is a settler between a fake server and a fake ledger, with its
// progress lines kept.
type settleRig struct {
	s      *settler
	ledger *fakeLedger
	mu     sync.Mutex
	lines  []string
}

func newSettleRig(t *testing.T, server http.Handler, longest time.Duration) *settleRig {
	t.Helper()
	srv := httptest.NewServer(server)
	t.Cleanup(srv.Close)
	rig := &settleRig{ledger: &fakeLedger{}}
	led := httptest.NewServer(rig.ledger)
	t.Cleanup(led.Close)
	rig.s = &settler{
		status: []string{srv.URL + "/control/status"}, ledger: sideeffects.NewClient(led.URL), longest: longest,
		hc: &http.Client{Timeout: time.Second},
		progress: func(format string, args ...any) {
			rig.mu.Lock()
			defer rig.mu.Unlock()
			rig.lines = append(rig.lines, fmt.Sprintf(format, args...))
		},
	}
	return rig
}

func (r *settleRig) progress() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

func (r *settleRig) wait(t *testing.T, within time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return r.s.wait(ctx, time.Now())
}

func TestSettleUsesTheServerStatusWhenItAnswers(t *testing.T) {
	status, asked := statusAnswering(inflightAnswer(2), inflightAnswer(1), inflightAnswer(0))
	rig := newSettleRig(t, status, time.Hour)
	rig.ledger.add(started("s1", "1", 10)) // open in the ledger: the status is believed first
	require.NoError(t, rig.wait(t, 5*time.Second))
	assert.Equal(t, int64(3), asked.Load(), "settled at the first answer of 0")
	assert.Zero(t, rig.ledger.fetches.Load(), "the ledger is not asked while the status answers")
	assert.Empty(t, rig.progress())
}

func TestSettleFallsBackToTheLedgerUntilEveryCallFinished(t *testing.T) {
	for name, status := range map[string]func(http.ResponseWriter){
		"status 404":             notFound,
		"status without a count": func(w http.ResponseWriter) { fmt.Fprint(w, `{"sessions":1}`) },
	} {
		t.Run(name, func(t *testing.T) {
			h, _ := statusAnswering(status)
			rig := newSettleRig(t, h, time.Hour)
			rig.ledger.add(started("s1", "1", 10), started("s1", "2", 20), finished("s1", "1"))
			done := make(chan error, 1)
			go func() { done <- rig.wait(t, 10*time.Second) }()
			require.Eventually(t, func() bool { return rig.ledger.fetches.Load() >= 3 }, 5*time.Second, time.Millisecond)
			select {
			case err := <-done:
				t.Fatalf("settled with a call still open: %v", err)
			default:
			}
			rig.ledger.add(finished("s1", "2"))
			require.NoError(t, <-done)
			assert.Contains(t, rig.progress(), "settling on the ledger's call_started/call_finished records: no server status:")
		})
	}
}

func TestSettleWaitsBlindlyWhenNothingCanTell(t *testing.T) {
	h, _ := statusAnswering(notFound)
	rig := newSettleRig(t, h, 80*time.Millisecond)
	exited := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, rig.s.wait(ctx, exited))
	assert.GreaterOrEqual(t, time.Since(exited), 80*time.Millisecond, "the longest call after the client exited")
	assert.Contains(t, rig.progress(), "blind wait of 80ms (the longest call) after the client exited")

	rig.s.longest = time.Hour
	err := rig.wait(t, 50*time.Millisecond)
	require.ErrorIs(t, err, context.DeadlineExceeded, "a blind wait is bounded by the deadline")
	assert.ErrorContains(t, err, "blind wait of 1h0m0s")
}

func TestSettleGivesUpAtTheDeadlineNamingWhatRuns(t *testing.T) {
	h, _ := statusAnswering(notFound)
	rig := newSettleRig(t, h, time.Millisecond)
	rig.ledger.add(started("s1", "1", 10), started("s1", "2", 20))
	err := rig.wait(t, 2*time.Second)
	require.ErrorContains(t, err, "server tools still running at the deadline (last: 2 calls still running, says the ledger)")
}

func TestSettleTakesCallsStartedBeforeAServerKillAsEnded(t *testing.T) {
	h, _ := statusAnswering(notFound)
	rig := newSettleRig(t, h, time.Hour)
	rig.s.killed = 5 * time.Millisecond
	rig.ledger.add(started("s1", "1", 4_999)) // died with the old server
	require.NoError(t, rig.wait(t, 5*time.Second))

	rig.ledger.add(started("s2", "1", 5_000)) // runs on the new one
	require.ErrorContains(t, rig.wait(t, 2*time.Second), "1 calls still running")
}

// TestServerKillsAreTheServersRestartsAndCrashes: the injections whose
// events say they stop the server (faults.Event.Stops: a restart, a crash).
func TestServerKillsAreTheServersRestartsAndCrashes(t *testing.T) {
	at := func(s int) time.Duration { return time.Duration(s) * time.Second }
	tests := []struct {
		name string
		ev   faults.Event
		want time.Duration
	}{
		{"restart of the server", faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindRestart, Target: "server", Stops: true, At: at(3)}, at(3)},
		{"crash of the server", faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindCrash, Target: "server", Stops: true, At: at(4)}, at(4)},
		{"failed crash of the server", faults.Event{Phase: faults.PhaseFailed, Kind: faults.KindCrash, Target: "server", Stops: true, At: at(5)}, at(5)},
		{"crash of the client", faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindCrash, Target: "client", Stops: true, At: at(6)}, 0},
		{"pause of the server", faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindPause, Target: "server", At: at(7)}, 0},
		{"session expiry", faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindExpireSession, Target: "server", At: at(8)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k serverKills
			k.seen(tc.ev)
			assert.Equal(t, tc.want, k.latest())
		})
	}
	var k serverKills
	k.seen(tests[1].ev)
	k.seen(tests[0].ev)
	assert.Equal(t, at(4), k.latest(), "the latest kill counts, whatever the order of the events")
}

func FuzzParseStatus(f *testing.F) {
	for _, seed := range []string{`{"sessions":1,"inflight_calls":2}`, `{"inflight_calls":0}`, `{"inflight_calls":-1}`,
		`{"inflight_calls":"3"}`, `{}`, `[]`, `null`, ``, `{"inflight_calls":1e3}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		n, err := parseStatus(bytes.NewReader(body))
		if err != nil {
			return
		}
		require.GreaterOrEqual(t, n, 0, "a count is never negative")
		var st struct {
			Inflight int `json:"inflight_calls"`
		}
		require.NoError(t, json.NewDecoder(bytes.NewReader(body)).Decode(&st))
		require.Equal(t, st.Inflight, n)
	})
}

func TestSettlerWaitsForEveryReplica(t *testing.T) {
	idle, _ := statusAnswering(inflightAnswer(0))
	busy, polls := statusAnswering(inflightAnswer(1), inflightAnswer(1), inflightAnswer(0))
	rig := newSettleRig(t, idle, time.Minute)
	second := httptest.NewServer(busy)
	t.Cleanup(second.Close)
	rig.s.status = append(rig.s.status, second.URL+"/control/status")
	require.NoError(t, rig.wait(t, 5*time.Second))
	assert.EqualValues(t, 3, polls.Load(), "settled only once the busy replica had no call running")
}

func TestServerKillsCountReplicas(t *testing.T) {
	k := &serverKills{}
	k.seen(faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindCrash, Stops: true, Target: "server-3", At: 7 * time.Second})
	k.seen(faults.Event{Phase: faults.PhaseInjected, Kind: faults.KindCrash, Stops: true, Target: "serverless", At: 9 * time.Second})
	assert.Equal(t, 7*time.Second, k.latest())
}

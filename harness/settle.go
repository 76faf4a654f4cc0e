package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/sideeffects"
)

// settleSource is how the settler learns whether tools are still running.
type settleSource int

const (
	fromStatus settleSource = iota + 1 // the server's GET /control/status
	fromLedger                         // call_started and call_finished records
	blindly                            // neither: wait the longest call
)

// settlePoll is how often the settler asks again.
const settlePoll = 20 * time.Millisecond

// settler waits, once the client has exited, until no tool is running on
// the server, so that every side effect the workload caused is in the
// ledger before it is collected. It asks, in order:
//
//  1. the server's GET /control/status, when it answers 200 with
//     {"inflight_calls": N}: settled at N = 0;
//  2. else the ledger, when it holds call_started records: settled once
//     every call_started has a call_finished with the same session and
//     request_id. A call started before the harness last restarted or
//     crashed the server is taken as ended: the process that ran it is
//     gone, and no call_finished will ever come;
//  3. else nothing can tell (a bring-your-own server with neither): it
//     waits the longest call of the plan after the client exited, and says
//     so in the progress.
//
// The source is chosen again on every poll, so a server whose status
// endpoint is briefly unreachable is judged by the ledger meanwhile. The
// wait ends at ctx's deadline with an error.
type settler struct {
	status   []string             // each replica's /control/status URL
	ledger   *sideeffects.Client  // the ledger the server writes to
	longest  time.Duration        // the plan's longest scaled call
	killed   time.Duration        // when the server was last restarted, on the run clock; 0 = never
	progress func(string, ...any) // one line per change of source
	hc       *http.Client
}

// wait returns once nothing runs on the server; clientExit is when the
// client exited.
func (s *settler) wait(ctx context.Context, clientExit time.Time) error {
	tick := time.NewTicker(settlePoll)
	defer tick.Stop()
	var said settleSource
	last := "no answer yet"
	for {
		ob := s.observe(ctx)
		if ctx.Err() != nil { // what the poll says now is only that time ran out
			return fmt.Errorf("server tools still running at the deadline (last: %s)", last)
		}
		if ob.src != said {
			s.announce(ob)
			said = ob.src
		}
		switch {
		case ob.err != nil:
			last = ob.err.Error()
		case ob.src == blindly:
			return s.blind(ctx, clientExit)
		case ob.open == 0:
			return nil
		default:
			last = fmt.Sprintf("%d calls still running, says the %s", ob.open, ob.src)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server tools still running at the deadline (last: %s)", last)
		case <-tick.C:
		}
	}
}

// observation is one poll's answer.
type observation struct {
	src  settleSource // 0 when no source answered
	open int          // calls running, per src
	why  string       // why the status endpoint could not tell
	err  error        // set when no source answered
}

// observe asks the sources in order.
func (s *settler) observe(ctx context.Context) observation {
	n, err := s.inflight(ctx)
	if err == nil {
		return observation{src: fromStatus, open: n}
	}
	open, started, lerr := s.openCalls(ctx)
	switch {
	case lerr != nil:
		return observation{err: fmt.Errorf("%v; ledger: %w", err, lerr)}
	case started == 0:
		return observation{src: blindly, why: err.Error()}
	}
	return observation{src: fromLedger, open: open, why: err.Error()}
}

func (s settleSource) String() string {
	switch s {
	case fromStatus:
		return "control status"
	case fromLedger:
		return "ledger"
	case blindly:
		return "blind wait"
	}
	return "no source"
}

// announce says when the settler falls back from the status endpoint.
func (s *settler) announce(ob observation) {
	switch ob.src {
	case fromLedger:
		s.progress("settling on the ledger's call_started/call_finished records: %s", ob.why)
	case blindly:
		s.progress("blind wait of %s (the longest call) after the client exited: %s and the ledger holds no call_started",
			s.longest, ob.why)
	}
}

// blind waits until the longest call has had time to end after the client
// exited.
func (s *settler) blind(ctx context.Context, clientExit time.Time) error {
	timer := time.NewTimer(time.Until(clientExit.Add(s.longest)))
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("blind wait of %s for the server's tools: %w", s.longest, ctx.Err())
	}
}

// inflight asks every replica's status endpoint how many tools run, and
// adds them up; one that cannot tell makes the sum unknown.
func (s *settler) inflight(ctx context.Context) (int, error) {
	total := 0
	for _, u := range s.status {
		n, err := s.inflightAt(ctx, u)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

func (s *settler) inflightAt(ctx context.Context, status string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, status, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("no server status: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("no server status: %s answered %s", status, resp.Status)
	}
	n, err := parseStatus(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return 0, fmt.Errorf("no server status: %s: %w", status, err)
	}
	return n, nil
}

// parseStatus reads inflight_calls from a /control/status answer; the
// other fields are the server's own business.
func parseStatus(body io.Reader) (int, error) {
	var st struct {
		Inflight *int `json:"inflight_calls"`
	}
	if err := json.NewDecoder(body).Decode(&st); err != nil {
		return 0, fmt.Errorf("unreadable answer: %w", err)
	}
	if st.Inflight == nil || *st.Inflight < 0 {
		return 0, errors.New("answer without a count in inflight_calls")
	}
	return *st.Inflight, nil
}

// openCalls counts the ledger's call_started records without a matching
// call_finished (same session and request_id), leaving out calls started
// before the server's last restart, and all call_started.
func (s *settler) openCalls(ctx context.Context) (open, started int, err error) {
	recs, err := s.ledger.Records(ctx)
	if err != nil {
		return 0, 0, err
	}
	type key struct{ session, request string }
	balance := map[key]int{}
	for _, r := range recs {
		k := key{r.Session, r.RequestID}
		switch r.Kind {
		case sideeffects.KindCallStarted:
			started++
			if s.killed > 0 && r.TUS < s.killed.Microseconds() {
				continue
			}
			balance[k]++
		case sideeffects.KindCallFinished:
			balance[k]--
		}
	}
	for _, b := range balance {
		open += max(b, 0)
	}
	return open, started, nil
}

// serverKills remembers when the fault injector last stopped the server
// (a restart or a crash: an injection whose event says it stops its
// target), at the start of the injection on the run clock, from its
// progress events. A failed injection counts too: it may have stopped the
// server before it failed.
type serverKills struct {
	mu   sync.Mutex
	last time.Duration
}

func (k *serverKills) seen(ev faults.Event) {
	if !isServer(ev.Target) || !ev.Stops || (ev.Phase != faults.PhaseInjected && ev.Phase != faults.PhaseFailed) {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.last = max(k.last, ev.At)
}

// isServer says whether an agent name is the server or one of its
// replicas.
func isServer(name string) bool {
	return name == agent.RoleServer || strings.HasPrefix(name, agent.RoleServer+"-")
}

func (k *serverKills) latest() time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.last
}

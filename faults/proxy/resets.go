package proxy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/wire/observer"
)

// The observed proxy's resets, in the agent's API. The agent resets the
// sockets itself, without touching the proxy's toxic chains, so bytes a
// toxic holds for a connection (a latency's) are lost with it, as with
// any reset, instead of being flushed ahead of it:
//
//	POST /chaosrun/reset              reset every connection open now;
//	                                  answers {"from_us", "to_us", "conns"}
//	POST /chaosrun/resets             {"id": ID, "after_us": A} from now until
//	                                  stopped, reset every connection A after
//	                                  the later of now and its opening;
//	                                  answers {"from_us"}
//	POST /chaosrun/resets/{id}/stop   stop; answers {"to_us", "conns"}
//
// Times are on the run's clock: from_us is the instant the agent took the
// connections to reset (or began resetting), to_us the instant it was done
// (or stopped), so the fault log keeps the window the proxy acted in.
const (
	pathReset      = "/chaosrun/reset"
	pathResets     = "/chaosrun/resets"
	pathResetsStop = "/chaosrun/resets/{id}/stop"
)

type resetsRequest struct {
	ID      string `json:"id"`
	AfterUS int64  `json:"after_us"`
}

type resetsAnswer struct {
	FromUS int64 `json:"from_us,omitempty"`
	ToUS   int64 `json:"to_us,omitempty"`
	Conns  int   `json:"conns"`
}

// storm resets every connection after a delay, from its start until it
// is stopped.
type storm struct {
	after time.Duration
	start time.Time

	mu      sync.Mutex
	stopped bool
	due     map[*observer.Conn]*time.Timer
	reset   int
}

// schedule resets c after the storm's delay, counted from the later of
// the storm's start and c's opening, unless the storm stops first.
func (s *storm) schedule(c *observer.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped || s.due[c] != nil {
		return
	}
	from := c.Opened()
	if from.Before(s.start) {
		from = s.start
	}
	s.due[c] = time.AfterFunc(time.Until(from.Add(s.after)), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.stopped && c.Reset() {
			s.reset++
		}
	})
}

// stop stops the storm: no reset follows its return.
func (s *storm) stop() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	for _, t := range s.due {
		t.Stop()
	}
	return s.reset
}

func (a *Agent) serveReset(w http.ResponseWriter, _ *http.Request) {
	o := &a.observers
	o.mu.Lock()
	tap := o.tap
	o.mu.Unlock()
	if tap == nil {
		http.Error(w, "reset: no observed proxy", http.StatusConflict)
		return
	}
	conns := tap.Conns()
	ans := resetsAnswer{FromUS: a.opts.Clock.Micros()}
	for _, c := range conns {
		if c.Reset() {
			ans.Conns++
		}
	}
	ans.ToUS = a.opts.Clock.Micros()
	writeAnswer(w, ans)
}

func (a *Agent) serveResets(w http.ResponseWriter, r *http.Request) {
	var req resetsRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "resets: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.ID == "" || req.AfterUS < 0 {
		http.Error(w, "resets: an id and an after_us of 0 or more", http.StatusBadRequest)
		return
	}
	o := &a.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.tap == nil:
		http.Error(w, "resets: no observed proxy", http.StatusConflict)
		return
	case o.storms[req.ID] != nil:
		http.Error(w, fmt.Sprintf("resets: %s already started", req.ID), http.StatusConflict)
		return
	}
	s := &storm{after: time.Duration(req.AfterUS) * time.Microsecond, start: time.Now(), due: map[*observer.Conn]*time.Timer{}}
	from := a.opts.Clock.Micros()
	for _, c := range o.tap.Conns() {
		s.schedule(c)
	}
	if o.storms == nil {
		o.storms = map[string]*storm{}
	}
	o.storms[req.ID] = s
	writeAnswer(w, resetsAnswer{FromUS: from})
}

func (a *Agent) serveResetsStop(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	o := &a.observers
	o.mu.Lock()
	s := o.storms[id]
	delete(o.storms, id)
	o.mu.Unlock()
	if s == nil {
		http.Error(w, fmt.Sprintf("resets: no resets %s", id), http.StatusNotFound)
		return
	}
	n := s.stop()
	writeAnswer(w, resetsAnswer{ToUS: a.opts.Clock.Micros(), Conns: n})
}

// opened hands a connection the tap relays to every running storm.
func (o *observers) opened(c *observer.Conn) {
	o.mu.Lock()
	storms := make([]*storm, 0, len(o.storms))
	for _, s := range o.storms {
		storms = append(storms, s)
	}
	o.mu.Unlock()
	for _, s := range storms {
		s.schedule(c)
	}
}

func writeAnswer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

package proxy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"github.com/chaosrun/chaosrun/faults/trigger"
)

// The proxy agent's own API, beside Toxiproxy's:
//
//	POST /chaosrun/triggers  {"triggers": [trigger.Trigger...]}  arm protocol triggers
//	GET  /chaosrun/firings   every firing so far, then each as it happens, one
//	                         JSON trigger.Firing per line, until the agent stops
//	POST /chaosrun/heals     {"index": I, "at_us": T}  fault I healed at T
const (
	pathTriggers = "/chaosrun/triggers"
	pathFirings  = "/chaosrun/firings"
	pathHeals    = "/chaosrun/heals"
)

type armRequest struct {
	Triggers []trigger.Trigger `json:"triggers"`
}

type healRequest struct {
	Index int   `json:"index"`
	AtUS  int64 `json:"at_us"`
}

// firings keeps every firing of the agent's engine and hands them to the
// streams that follow them.
type firings struct {
	mu      sync.Mutex
	all     []trigger.Firing
	changed chan struct{} // closed and replaced on every firing
	done    chan struct{} // closed when the agent stops
}

func newFirings() *firings {
	return &firings{changed: make(chan struct{}), done: make(chan struct{})}
}

func (f *firings) add(fr trigger.Firing) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.all = append(f.all, fr)
	close(f.changed)
	f.changed = make(chan struct{})
}

// since returns the firings after the first n, and a channel closed when
// there are more.
func (f *firings) since(n int) ([]trigger.Firing, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.all[min(n, len(f.all)):], f.changed
}

func (a *Agent) serveArm(w http.ResponseWriter, r *http.Request) {
	var req armRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "arm triggers: "+err.Error(), http.StatusBadRequest)
		return
	}
	var errs []error
	for _, t := range req.Triggers {
		errs = append(errs, a.engine.Arm(t))
	}
	if err := errors.Join(errs...); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (a *Agent) serveHeal(w http.ResponseWriter, r *http.Request) {
	var req healRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil {
		http.Error(w, "heal: "+err.Error(), http.StatusBadRequest)
		return
	}
	a.engine.Healed(req.Index, req.AtUS)
	w.WriteHeader(http.StatusNoContent)
}

// serveFirings streams every firing, past and future, until the client
// goes away or the agent stops.
func (a *Agent) serveFirings(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	sent := 0
	for {
		news, changed := a.firings.since(sent)
		for _, f := range news {
			if err := enc.Encode(f); err != nil {
				return
			}
		}
		sent += len(news)
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-a.firings.done:
			// Whatever fired as the agent stopped still goes out.
			if rest, _ := a.firings.since(sent); len(rest) > 0 {
				continue
			}
			return
		}
	}
}

// errNoFirings is returned by a firings stream that ended.
var errNoFirings = errors.New("the proxy agent's firings stream ended")

func decodeFiring(dec *json.Decoder) (trigger.Firing, error) {
	var f trigger.Firing
	if err := dec.Decode(&f); err != nil {
		return f, fmt.Errorf("%w: %w", errNoFirings, err)
	}
	return f, nil
}

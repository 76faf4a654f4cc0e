package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	"github.com/chaosrun/chaosrun/faults/observer"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// The wire observer, in the proxy agent's API:
//
//	POST /chaosrun/taps                 {"edge": "client"|"server", "listen": ADDR, "upstream": ADDR}
//	                                    start the tap of an edge; answers {"listen": the bound address}
//	POST /chaosrun/taps/{edge}/refuse   the tap stops accepting: new connections are refused
//	POST /chaosrun/taps/{edge}/accept   the tap listens again on the same address
//
// Every tap's records go to one wire.jsonl (Options.WirePath) and, as they
// are made, to the protocol triggers.
const (
	pathTaps   = "/chaosrun/taps"
	pathRefuse = "/chaosrun/taps/{edge}/refuse"
	pathAccept = "/chaosrun/taps/{edge}/accept"
)

type tapRequest struct {
	Edge     wire.Edge `json:"edge"`
	Listen   string    `json:"listen"`
	Upstream string    `json:"upstream"`
}

type tapAnswer struct {
	Listen string `json:"listen"`
}

// observers is the proxy agent's taps and the record they share.
type observers struct {
	mu     sync.Mutex
	taps   map[wire.Edge]*observer.Tap
	writer *wire.Writer
	closed bool
}

// sink writes each record to wire.jsonl, which numbers it, then hands it
// to the triggers: a firing names the wire record that made it.
type sink struct {
	w      *wire.Writer
	engine interface{ Observe(*wire.Record) }
}

func (s sink) Observe(r *wire.Record) {
	if s.w != nil {
		_, _ = s.w.Write(r) // a failed write is kept by the writer and reported on Close
	}
	s.engine.Observe(r)
}

func (a *Agent) serveTap(w http.ResponseWriter, r *http.Request) {
	var req tapRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "tap: "+err.Error(), http.StatusBadRequest)
		return
	}
	addr, err := a.startTap(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tapAnswer{Listen: addr})
}

// startTap starts the tap of one edge, opening wire.jsonl with the first.
func (a *Agent) startTap(req tapRequest) (string, error) {
	if req.Edge != wire.EdgeClient && req.Edge != wire.EdgeServer {
		return "", fmt.Errorf("tap: edge must be client or server, got %q", req.Edge)
	}
	o := &a.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return "", errors.New("tap: the agent is stopping")
	case o.taps[req.Edge] != nil:
		return "", fmt.Errorf("tap: the %s edge has a tap already", req.Edge)
	}
	if o.writer == nil && a.opts.WirePath != "" {
		wr, err := wire.CreateShare(a.opts.WirePath, a.opts.Share)
		if err != nil {
			return "", fmt.Errorf("tap: %w", err)
		}
		o.writer = wr
	}
	ln, err := net.Listen("tcp", req.Listen)
	if err != nil {
		return "", fmt.Errorf("tap %s: %w", req.Edge, err)
	}
	t, err := observer.Start(context.Background(), ln, observer.Config{
		Edge: req.Edge, Upstream: req.Upstream, Clock: a.opts.Clock, Sink: sink{w: o.writer, engine: a.engine}, Logger: a.opts.Logger,
		Share: a.opts.Share,
	})
	if err != nil {
		ln.Close()
		return "", fmt.Errorf("tap %s: %w", req.Edge, err)
	}
	if o.taps == nil {
		o.taps = map[wire.Edge]*observer.Tap{}
	}
	o.taps[req.Edge] = t
	return t.Addr(), nil
}

func (a *Agent) serveRefuse(w http.ResponseWriter, r *http.Request) { a.serveListening(w, r, false) }
func (a *Agent) serveAccept(w http.ResponseWriter, r *http.Request) { a.serveListening(w, r, true) }

func (a *Agent) serveListening(w http.ResponseWriter, r *http.Request, on bool) {
	edge := wire.Edge(r.PathValue("edge"))
	a.observers.mu.Lock()
	t := a.observers.taps[edge]
	a.observers.mu.Unlock()
	if t == nil {
		http.Error(w, fmt.Sprintf("no tap on the %s edge", edge), http.StatusNotFound)
		return
	}
	var err error
	if on {
		err = t.Accept()
	} else {
		err = t.Refuse()
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// close stops every tap, then closes wire.jsonl with everything they
// recorded.
func (o *observers) close() error {
	o.mu.Lock()
	o.closed = true
	taps, writer := o.taps, o.writer
	o.mu.Unlock()
	var errs []error
	for _, t := range taps {
		errs = append(errs, t.Close())
	}
	if writer != nil {
		errs = append(errs, writer.Close())
	}
	return errors.Join(errs...)
}

package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/stream"
	tpxtoxics "github.com/Shopify/toxiproxy/v2/toxics"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/observer"
)

// The wire observer, in the proxy agent's API:
//
//	POST /chaosrun/observe              {"proxy": NAME, "listen": ADDR}
//	                                    observe the Toxiproxy proxy NAME: accept its
//	                                    clients on ADDR; answers {"listen": the bound address}
//	POST /chaosrun/taps/{edge}/refuse   the client edge stops accepting: new connections are refused
//	POST /chaosrun/taps/{edge}/accept   the client edge listens again on the same address
//
// The observed proxy's records go to wire.jsonl (Options.WirePath) and, as
// they are made, to the protocol triggers.
const (
	pathObserve = "/chaosrun/observe"
	pathRefuse  = "/chaosrun/taps/{edge}/refuse"
	pathAccept  = "/chaosrun/taps/{edge}/accept"
)

type observeRequest struct {
	Proxy  string `json:"proxy"`
	Listen string `json:"listen"`
}

type observeAnswer struct {
	Listen string `json:"listen"`
}

// observers is the agent's observation of its proxy and the record it
// keeps.
type observers struct {
	mu     sync.Mutex
	tap    *observer.Tap
	proxy  string // the observed Toxiproxy proxy's name
	writer *wire.Writer
	closed bool
	// refused is the client edge's refusal (Refuse), disabled the
	// proxy's (its enabled flag in Toxiproxy's API): the tap listens
	// while neither holds.
	refused, disabled bool
	storms            map[string]*storm // running resets by id
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

func (a *Agent) serveObserve(w http.ResponseWriter, r *http.Request) {
	var req observeRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		http.Error(w, "observe: "+err.Error(), http.StatusBadRequest)
		return
	}
	addr, err := a.observe(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(observeAnswer{Listen: addr})
}

// observe starts observing a Toxiproxy proxy, opening wire.jsonl.
func (a *Agent) observe(req observeRequest) (string, error) {
	p, err := a.api.Collection.Get(req.Proxy)
	if err != nil {
		return "", fmt.Errorf("observe %q: %w", req.Proxy, err)
	}
	o := &a.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	switch {
	case o.closed:
		return "", errors.New("observe: the agent is stopping")
	case o.tap != nil:
		return "", fmt.Errorf("observe %q: the agent observes proxy %s already", req.Proxy, o.proxy)
	}
	if o.writer == nil && a.opts.WirePath != "" {
		wr, err := wire.CreateShare(a.opts.WirePath, a.opts.Share)
		if err != nil {
			return "", fmt.Errorf("observe: %w", err)
		}
		o.writer = wr
	}
	ln, err := net.Listen("tcp", req.Listen)
	if err != nil {
		return "", fmt.Errorf("observe %q: %w", req.Proxy, err)
	}
	t, err := observer.Start(context.Background(), ln, observer.Config{
		Upstream: p.Upstream, Relay: a.relay(req.Proxy), Clock: a.opts.Clock,
		Sink: sink{w: o.writer, engine: a.engine}, Logger: a.opts.Logger, Share: a.opts.Share,
	})
	if err != nil {
		ln.Close()
		return "", fmt.Errorf("observe %q: %w", req.Proxy, err)
	}
	o.tap, o.proxy = t, req.Proxy
	return t.Addr(), nil
}

// relay hands each observed connection to the proxy's toxics, or closes
// it when the proxy is gone.
func (a *Agent) relay(name string) observer.Relay {
	return func(c *observer.Conn) {
		p, err := a.api.Collection.Get(name)
		if err != nil {
			c.Close()
			return
		}
		Link(a.api, p, c)
		a.observers.opened(c)
	}
}

// Link hands connection c to Toxiproxy proxy p, as Toxiproxy's own accept
// loop hands it the connections it accepts: a link of p's upstream toxics
// from the client's socket to the server's, and one of its downstream
// toxics back, each closing the socket it writes to when its chain ends.
// When either chain holds a reset_peer, the connection's closes are RSTs
// (Conn.ResetOnClose), as Toxiproxy makes them for the sockets it accepts.
func Link(api *toxiproxy.ApiServer, p *toxiproxy.Proxy, c *observer.Conn) {
	for _, t := range p.Toxics.GetToxicArray() {
		if w, ok := t.(*tpxtoxics.ToxicWrapper); ok && w.Type == toxics.ResetPeer {
			c.ResetOnClose()
			break
		}
	}
	name := c.Name()
	p.Toxics.StartLink(api, name+"upstream", c.Client(), c.Server(), stream.Upstream)
	p.Toxics.StartLink(api, name+"downstream", c.Server(), c.Client(), stream.Downstream)
}

// resetPeer is Toxiproxy's reset_peer toxic under a Go type of the agent's:
// Toxiproxy gives a link's sockets SO_LINGER 0 for its own type by asserting
// them to *net.TCPConn, which an observed socket is not; Link does that
// for them instead. Everything else (attributes, behaviour) is Toxiproxy's.
type resetPeer struct {
	tpxtoxics.ResetToxic
}

func (a *Agent) serveRefuse(w http.ResponseWriter, r *http.Request) { a.serveListening(w, r, false) }
func (a *Agent) serveAccept(w http.ResponseWriter, r *http.Request) { a.serveListening(w, r, true) }

func (a *Agent) serveListening(w http.ResponseWriter, r *http.Request, on bool) {
	edge := wire.Edge(r.PathValue("edge"))
	if edge != wire.EdgeClient {
		http.Error(w, fmt.Sprintf("no listener on the %s edge", edge), http.StatusNotFound)
		return
	}
	o := &a.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tap == nil {
		http.Error(w, "no observed proxy", http.StatusNotFound)
		return
	}
	o.refused = !on
	if err := o.listenLocked(); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// listenLocked has the tap listen while the edge is not refused and the
// proxy not disabled. o.mu is held.
func (o *observers) listenLocked() error {
	if o.refused || o.disabled {
		return o.tap.Refuse()
	}
	return o.tap.Accept()
}

// following runs Toxiproxy's API and, after any request that may have
// changed a proxy, has the observation follow the observed proxy's state:
// disabled (or deleted), its client edge refuses new connections and every
// connection through it is closed, as Toxiproxy does for the connections
// it accepts itself; enabled again, it listens again.
func (a *Agent) following(api http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		api.ServeHTTP(w, r)
		if r.Method != http.MethodGet {
			a.follow()
		}
	})
}

func (a *Agent) follow() {
	o := &a.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tap == nil || o.closed {
		return
	}
	disabled := true
	if p, err := a.api.Collection.Get(o.proxy); err == nil {
		p.Lock()
		disabled = !p.Enabled
		p.Unlock()
	}
	if disabled == o.disabled {
		return
	}
	o.disabled = disabled
	if err := o.listenLocked(); err != nil {
		a.opts.Logger.Warn("observer: following the proxy's state", "proxy", o.proxy, "disabled", disabled, "err", err)
	}
	if disabled {
		for _, c := range o.tap.Conns() {
			c.Close()
		}
	}
}

// close stops the tap, then closes wire.jsonl with everything it
// recorded.
func (o *observers) close() error {
	o.mu.Lock()
	o.closed = true
	tap, writer := o.tap, o.writer
	for _, s := range o.storms {
		s.stop()
	}
	o.mu.Unlock()
	var errs []error
	if tap != nil {
		errs = append(errs, tap.Close())
	}
	if writer != nil {
		errs = append(errs, writer.Close())
	}
	return errors.Join(errs...)
}

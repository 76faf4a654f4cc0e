// Package proxy is the proxy agent's library: an embedded Toxiproxy server
// with chaosrun's toxics registered, serving Toxiproxy's REST API on a
// listener the caller owns, and beside it chaosrun's own API for the wire
// observer and protocol triggers (see taps.go and triggers.go). `chaosrun
// agent proxy` runs it; the runner drives Toxiproxy with its own Go client
// (github.com/Shopify/toxiproxy/v2/client), creating proxies and adding
// toxics by type name, ours included, and the rest with [Client].
//
// The agent observes one of its proxies in its own byte path
// ([Client.Observe]): the wire observer (package wire/observer) accepts
// the proxy's clients, dials its upstream and hands both sockets to the
// proxy's toxic links ([Link]), as Toxiproxy's own accept loop would, so
// the client edge is the client's socket and the server edge the server's,
// with no extra hop between. Toxiproxy's own listener for that proxy stays
// open and unused: a client that connected to it would pass unobserved.
// The observation follows the proxy's state in Toxiproxy's API: disabled
// or deleted, new connections are refused and open ones closed, as
// Toxiproxy does with its own.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	tpxtoxics "github.com/Shopify/toxiproxy/v2/toxics"
	"github.com/rs/zerolog"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
)

// shutdownTimeout bounds how long Close waits for API requests in flight.
const shutdownTimeout = 5 * time.Second

// Agent is a running Toxiproxy API server and the proxies created through it.
type Agent struct {
	opts      Options
	api       *toxiproxy.ApiServer
	engine    *trigger.Engine
	firings   *firings
	observers observers
	srv       *http.Server
	url       string
	stop      func() bool // detaches the ctx watcher

	served    chan struct{} // closed when Serve has returned
	serveErr  error
	closeOnce sync.Once
	closeErr  error
}

// Options configure an [Agent].
type Options struct {
	// Log receives Toxiproxy's log lines; nil discards them.
	Log io.Writer
	// Clock is the run's base clock: triggers fire and wire records are
	// timed on it. The zero value starts a clock at Start.
	Clock runclock.Clock
	// WirePath is where the taps write wire.jsonl; empty keeps no file
	// (the records still drive the triggers).
	WirePath string
	// Logger receives the observer's logs; nil discards them.
	Logger *slog.Logger
	// Share, when several proxy agents each carry a share of a run's
	// clients, numbers this agent's wire records and connections apart from
	// the others' (see wire.Share); the zero value is the only proxy.
	Share wire.Share
}

// Start registers chaosrun's toxics, and serves Toxiproxy's REST API and
// chaosrun's own on ln until Close is called or ctx ends. Proxies created
// through the API listen on the addresses they are given; "127.0.0.1:0"
// picks a free port, which the API reports back as the proxy's listen
// address.
func Start(ctx context.Context, ln net.Listener, opts Options) (*Agent, error) {
	if ln == nil {
		return nil, errors.New("proxy agent: no listener")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("proxy agent: %w", err)
	}
	toxics.Register()
	tpxtoxics.Register(toxics.ResetPeer, new(resetPeer))
	logger := zerolog.Nop()
	if opts.Log != nil {
		logger = zerolog.New(opts.Log).With().Timestamp().Logger()
	}
	if opts.Clock.Base().IsZero() {
		opts.Clock = runclock.Start()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if !opts.Share.Valid() {
		return nil, fmt.Errorf("proxy agent: share %d of %d", opts.Share.Index, opts.Share.Of)
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), logger)
	a := &Agent{
		opts:    opts,
		api:     api,
		firings: newFirings(),
		url:     "http://" + ln.Addr().String(),
		served:  make(chan struct{}),
	}
	a.engine = trigger.NewEngine(opts.Clock, a.firings.add)
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+pathTriggers, a.serveArm)
	mux.HandleFunc("GET "+pathFirings, a.serveFirings)
	mux.HandleFunc("POST "+pathHeals, a.serveHeal)
	mux.HandleFunc("POST "+pathObserve, a.serveObserve)
	mux.HandleFunc("POST "+pathRefuse, a.serveRefuse)
	mux.HandleFunc("POST "+pathAccept, a.serveAccept)
	mux.HandleFunc("POST "+pathReset, a.serveReset)
	mux.HandleFunc("POST "+pathResets, a.serveResets)
	mux.HandleFunc("POST "+pathResetsStop, a.serveResetsStop)
	mux.Handle("/", a.following(api.Routes()))
	a.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(a.served)
		if err := a.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			a.serveErr = err
		}
	}()
	a.stop = context.AfterFunc(ctx, a.shutdown)
	return a, nil
}

// URL is the API's base URL, built from the listener's address.
func (a *Agent) URL() string { return a.url }

// Close stops serving the API, stops every proxy (closing all their
// connections) and waits until the server has returned. It is idempotent
// and returns the same result every time.
func (a *Agent) Close() error {
	a.stop()
	a.shutdown()
	return a.closeErr
}

func (a *Agent) shutdown() {
	a.closeOnce.Do(func() {
		errTaps := a.observers.close() // the last records may still fire triggers
		a.engine.Close()
		close(a.firings.done)
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		errShutdown := a.srv.Shutdown(ctx)
		errClear := a.api.Collection.Clear()
		<-a.served
		if err := errors.Join(errTaps, errShutdown, errClear, a.serveErr); err != nil {
			a.closeErr = fmt.Errorf("proxy agent: %w", err)
		}
	})
}

// Package proxy is the proxy agent's library: an embedded Toxiproxy server
// with chaosrun's toxics registered, serving Toxiproxy's REST API (and
// nothing else) on a listener the caller owns. `chaosrun agent proxy` runs
// it; the runner then drives it with Toxiproxy's own Go client
// (github.com/Shopify/toxiproxy/v2/client), creating proxies and adding
// toxics by type name, ours included.
package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"

	"github.com/chaosrun/chaosrun/faults/toxics"
)

// shutdownTimeout bounds how long Close waits for API requests in flight.
const shutdownTimeout = 5 * time.Second

// Agent is a running Toxiproxy API server and the proxies created through it.
type Agent struct {
	api  *toxiproxy.ApiServer
	srv  *http.Server
	url  string
	stop func() bool // detaches the ctx watcher

	served    chan struct{} // closed when Serve has returned
	serveErr  error
	closeOnce sync.Once
	closeErr  error
}

// Start registers chaosrun's toxics, and serves Toxiproxy's REST API on ln
// until Close is called or ctx ends. Toxiproxy's log lines go to log (nil
// discards them). Proxies created through the API listen on the addresses
// they are given; "127.0.0.1:0" picks a free port, which the API reports
// back as the proxy's listen address.
func Start(ctx context.Context, ln net.Listener, log io.Writer) (*Agent, error) {
	if ln == nil {
		return nil, errors.New("proxy agent: no listener")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("proxy agent: %w", err)
	}
	toxics.Register()
	logger := zerolog.Nop()
	if log != nil {
		logger = zerolog.New(log).With().Timestamp().Logger()
	}
	api := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), logger)
	a := &Agent{
		api:    api,
		srv:    &http.Server{Handler: api.Routes(), ReadHeaderTimeout: 10 * time.Second},
		url:    "http://" + ln.Addr().String(),
		served: make(chan struct{}),
	}
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
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		errShutdown := a.srv.Shutdown(ctx)
		errClear := a.api.Collection.Clear()
		<-a.served
		if err := errors.Join(errShutdown, errClear, a.serveErr); err != nil {
			a.closeErr = fmt.Errorf("proxy agent: %w", err)
		}
	})
}

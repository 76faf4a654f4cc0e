package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
)

// Causes of a tool's context being cancelled.
var (
	errCancelled = errors.New("cancelled by the client")
	errShutdown  = errors.New("server shutdown deadline passed")
	errClosed    = errors.New("server closed")
)

// Server is the reference MCP Streamable HTTP server. Create it with [New],
// serve with [Server.Serve] (or mount [Server.Handler]), stop with
// [Server.Shutdown] or [Server.Close].
type Server struct {
	cfg   Config
	log   *slog.Logger
	store *store.Store
	tasks *taskStore // nil when Config.Tasks is off; either task shape's
	http  *http.Server
	// ledger stamps every record; tools runs charge and chatty.
	ledger tools.Ledger
	tools  *tools.Runner
	mux    http.Handler

	mu       sync.Mutex
	sessions map[string]*session

	// life is cancelled by Close: ledger writes and everything else that
	// must outlive a request but not the server.
	life     context.Context
	endLife  context.CancelFunc
	toolCtx  context.Context
	endTools context.CancelCauseFunc
	calls    tracker
	pumps    tracker // connections writing a stream

	stopping     chan struct{}
	drained      chan struct{} // closed when Shutdown's drain is over
	stopOnce     sync.Once
	shutdownOnce sync.Once
	shutdownErr  error
	closeOnce    sync.Once
	closeErr     error
}

// New validates cfg, opens the event store (replaying the file store's
// journal), and resolves the calls a previous process left in flight.
func New(cfg Config) (*Server, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	opts := store.Options{RetentionEvents: cfg.RetentionEvents, RetentionAge: cfg.RetentionAge}
	switch cfg.EventStore {
	case EventStoreFile:
		opts.Path = cfg.StorePath
	case EventStoreRedis:
		j := cfg.journal
		if j == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			var err error
			j, err = store.DialRedis(ctx, cfg.RedisAddr, store.RedisKey)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("server: %w", err)
			}
		}
		opts.Shared, opts.Owner = j, cfg.StoreOwner
	}
	st, err := store.Open(opts)
	if err != nil {
		if opts.Shared != nil {
			_ = opts.Shared.Close()
		}
		return nil, fmt.Errorf("server: %w", err)
	}
	s := &Server{
		cfg:      cfg,
		log:      cfg.Logger,
		store:    st,
		sessions: map[string]*session{},
		stopping: make(chan struct{}),
		drained:  make(chan struct{}),
		ledger:   tools.Ledger{Recorder: cfg.Recorder, Source: cfg.Source, Clock: cfg.Clock, Logger: cfg.Logger},
	}
	s.tools = tools.NewRunner(tools.Config{Ledger: s.ledger, Keys: st, DefaultChargeDuration: cfg.DefaultChargeDuration, OnCancel: cfg.OnCancel})
	if cfg.Tasks != TasksOff {
		if s.tasks, err = openTasks(cfg); err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("server: %w", err)
		}
	}
	s.life, s.endLife = context.WithCancel(context.Background())
	s.toolCtx, s.endTools = context.WithCancelCause(s.life)
	s.mux = s.routes()
	s.http = &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelDebug),
	}
	s.recoverRestart()
	return s, nil
}

// Handler serves /mcp and /control/.
func (s *Server) Handler() http.Handler { return s.mux }

// Serve accepts connections on ln until Shutdown or Close. Like
// http.Server.Serve it always returns a non-nil error, except that it
// returns nil once Shutdown or Close has been called.
func (s *Server) Serve(ln net.Listener) error {
	err := s.http.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("server: serve: %w", err)
}

// Shutdown stops gracefully: it stops accepting, ends the standalone SSE
// connections with a retry hint (every SSE connection, with the file store,
// whose journal keeps what a restarted server replays), and drains until
// ctx is done: running tools finish and their results are delivered on the
// connections still attached to their streams (or go to the event log for
// a later resume). When ctx is
// done, the connections left end with a retry hint and tools still running
// are cancelled, their calls left unresolved for a restarted file store to
// resolve. With the memory store every session then ends with reason
// "shutdown". It is idempotent; later calls return the first call's result.
func (s *Server) Shutdown(ctx context.Context) error {
	s.shutdownOnce.Do(func() { s.shutdownErr = s.shutdown(ctx) })
	return s.shutdownErr
}

// drainGrace bounds how long connections get, once the drain is over, to
// write their retry hint before they are closed.
const drainGrace = 200 * time.Millisecond

func (s *Server) shutdown(ctx context.Context) error {
	s.beginStop()
	var errs []error
	if err := s.http.Shutdown(ctx); err != nil {
		errs = append(errs, fmt.Errorf("server: shutdown: %w", err))
		close(s.drained)
		grace, cancel := context.WithTimeout(context.Background(), drainGrace)
		_ = s.pumps.wait(grace)
		cancel()
		_ = s.http.Close()
	}
	if err := s.calls.wait(ctx); err != nil {
		s.log.Info("shutdown: cancelling tools still running", "calls", s.calls.count())
		s.endTools(errShutdown)
		_ = s.calls.wait(context.Background())
		errs = append(errs, fmt.Errorf("server: shutdown: tools still running: %w", err))
	}
	if !s.store.Durable() {
		for _, sess := range s.liveSessions() {
			s.endSession(sess, reasonShutdown)
		}
	}
	if err := s.store.Close(); err != nil {
		errs = append(errs, err)
	}
	if s.tasks != nil {
		errs = append(errs, s.tasks.close())
	}
	return errors.Join(errs...)
}

// Close stops at once, as a crash would: connections are dropped, running
// tools are cancelled without answering, and the store is closed. What the
// file store acknowledged survives. It is idempotent and returns once every
// tool goroutine has returned.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.beginStop()
		err := s.http.Close()
		s.endTools(errClosed)
		_ = s.calls.wait(context.Background())
		s.closeErr = errors.Join(err, s.store.Close())
		if s.tasks != nil {
			s.closeErr = errors.Join(s.closeErr, s.tasks.close())
		}
		s.endLife()
	})
	return s.closeErr
}

func (s *Server) beginStop() {
	s.stopOnce.Do(func() { close(s.stopping) })
}

func (s *Server) stopped() bool {
	select {
	case <-s.stopping:
		return true
	default:
		return false
	}
}

// tracker counts running tools and lets a caller wait for none.
type tracker struct {
	mu   sync.Mutex
	n    int
	zero chan struct{}
}

func (t *tracker) add() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == 0 {
		t.zero = make(chan struct{})
	}
	t.n++
}

func (t *tracker) done() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n--
	if t.n == 0 {
		close(t.zero)
	}
}

func (t *tracker) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

func (t *tracker) wait(ctx context.Context) error {
	t.mu.Lock()
	if t.n == 0 {
		t.mu.Unlock()
		return nil
	}
	zero := t.zero
	t.mu.Unlock()
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// openTasks opens the task store cfg names.
func openTasks(cfg Config) (*taskStore, error) {
	switch cfg.TaskStore {
	case EventStoreFile:
		return openTaskStore(cfg.TaskStorePath)
	case EventStoreRedis:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		j, err := store.DialRedis(ctx, cfg.RedisAddr, store.RedisTaskKey)
		if err != nil {
			return nil, err
		}
		ts, err := openSharedTaskStore(j, cfg.StoreOwner)
		if err != nil {
			_ = j.Close()
		}
		return ts, err
	}
	return openTaskStore("")
}

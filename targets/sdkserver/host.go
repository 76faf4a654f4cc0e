package sdkserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/tools"
)

// reasonShutdown ends a tool cut short by [Host.Shutdown], and names a
// session closed after it.
const reasonShutdown = "shutdown"

var errShutdown = errors.New("server shutting down")

// Config configures [NewHost].
type Config struct {
	Recorder sideeffects.Recorder // nil = sideeffects.NewMemory()
	Source   string               // Record.Source of every record
	Clock    runclock.Clock       // zero = a clock starting now
	Logger   *slog.Logger         // nil = discard
	// DefaultChargeDuration is how long a charge runs when the call gives
	// no duration_ms.
	DefaultChargeDuration time.Duration
	// OnCancel is what a tool does when its request is cancelled
	// (Request.Cancelled): one of tools.OnCancelModes, "" is stop.
	OnCancel string
}

// Request identifies one tool invocation on the server: the SDK's session
// id and the JSON-RPC request id ("" when the SDK did not let it through).
type Request struct {
	Session   string
	RequestID string
	// Task is the task the SDK runs the call as (2025-11-25 tasks), or "".
	Task string
	// Client is the calling client's name when the request says it itself
	// (2026-07-28's _meta clientInfo); "" takes the session's.
	Client string
	// Cancelled closes when the SDK cancels the request (at 2026-07-28,
	// the end of the handler's context); nil never does.
	Cancelled <-chan struct{}
	// Stream is the label [Front] gave the call's connection
	// (StreamHeader), "" for none.
	Stream string
}

// watchStream labels done, the end of a call's HTTP request, until forget.
func (h *Host) watchStream(done <-chan struct{}) (label string, forget func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nstreams++
	label = strconv.FormatInt(h.nstreams, 10)
	h.streams[label] = done
	return label, func() {
		h.mu.Lock()
		delete(h.streams, label)
		h.mu.Unlock()
	}
}

// stream is the end of the connection labelled label, or nil.
func (h *Host) stream(label string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.streams[label]
}

// Host runs the tool core (package targets/tools) inside an SDK server and
// records the session lifecycle the SDK exposes. It is safe for concurrent
// use.
type Host struct {
	ledger   tools.Ledger
	tools    *tools.Runner
	log      *slog.Logger
	inflight atomic.Int64
	// life ends at Shutdown: it is the context every tool runs in.
	life context.Context
	stop context.CancelFunc

	mu       sync.Mutex
	streams  map[string]<-chan struct{} // Front's label -> closed when the call's connection ends
	nstreams int64
	sessions map[string]string // open session -> client name
	closing  map[string]string // session -> reason noted before it closed
	closed   map[string]bool
	tasks    map[string]tools.Call // task id -> the call it runs
}

// NewHost returns a host writing to cfg.Recorder, with idempotency keys
// kept in memory.
func NewHost(cfg Config) *Host {
	if cfg.Recorder == nil {
		cfg.Recorder = sideeffects.NewMemory()
	}
	if cfg.Clock.Base().IsZero() {
		cfg.Clock = runclock.Start()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Host{
		ledger:   tools.Ledger{Recorder: cfg.Recorder, Source: cfg.Source, Clock: cfg.Clock, Logger: cfg.Logger},
		log:      cfg.Logger,
		sessions: map[string]string{}, closing: map[string]string{}, closed: map[string]bool{},
		tasks:   map[string]tools.Call{},
		streams: map[string]<-chan struct{}{},
	}
	h.tools = tools.NewRunner(tools.Config{Ledger: h.ledger, DefaultChargeDuration: cfg.DefaultChargeDuration, OnCancel: cfg.OnCancel})
	h.life, h.stop = context.WithCancel(context.Background())
	return h
}

// NewHostFor is [NewHost] for the server of target, an SDK whose adapter
// also takes an event retention and a session TTL: it refuses negative
// settings, naming target, and records with Source target unless cfg
// names another.
func NewHostFor(target string, retentionEvents int, sessionTTL time.Duration, cfg Config) (*Host, error) {
	if retentionEvents < 0 || sessionTTL < 0 || cfg.DefaultChargeDuration < 0 {
		return nil, fmt.Errorf("%s server: retention, session TTL and charge duration must not be negative", target)
	}
	if cfg.Source == "" {
		cfg.Source = target
	}
	return NewHost(cfg), nil
}

// Logger is where the host logs, for the SDK to log there too.
func (h *Host) Logger() *slog.Logger { return h.log }

// Inflight is the number of tool invocations running now.
func (h *Host) Inflight() int64 { return h.inflight.Load() }

// Sessions is the number of sessions opened and not yet closed.
func (h *Host) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.sessions)
}

// openSessions lists the open sessions.
func (h *Host) openSessions() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.sessions))
}

// HasSession reports whether session was opened and has not closed.
func (h *Host) HasSession(session string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, ok := h.sessions[session]
	return ok
}

// Shutdown ends every running tool: each records its call as finished with
// an error (reason "shutdown") and returns an error result. Later calls
// fail the same way. It is idempotent.
func (h *Host) Shutdown() { h.stop() }

func (h *Host) record(r sideeffects.Record) {
	_ = h.ledger.Record(context.Background(), r)
}

// SessionOpened records that initialize created session for client (its
// clientInfo.name) at the negotiated protocol version.
func (h *Host) SessionOpened(session, client, protocol string) {
	h.mu.Lock()
	h.sessions[session] = client
	h.mu.Unlock()
	h.record(sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: session, Client: client, Detail: protocol})
}

// NoteClosing remembers why session is about to close, for
// [Host.SessionClosed] to record.
func (h *Host) NoteClosing(session, reason string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.closing[session]; !ok {
		h.closing[session] = reason
	}
}

// SessionClosed records that session ended, once, and only for a session
// [Host.SessionOpened] saw. The reason is the one noted with
// [Host.NoteClosing], "shutdown" after [Host.Shutdown], or fallback.
func (h *Host) SessionClosed(session, fallback string) {
	h.mu.Lock()
	_, open := h.sessions[session]
	if !open || h.closed[session] {
		h.mu.Unlock()
		return
	}
	h.closed[session] = true
	delete(h.sessions, session)
	reason, noted := h.closing[session]
	delete(h.closing, session)
	h.mu.Unlock()
	if !noted {
		reason = fallback
		if h.life.Err() != nil {
			reason = reasonShutdown
		}
	}
	h.record(sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: session, Reason: reason})
}

func (h *Host) clientOf(session string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sessions[session]
}

// Call runs tool for req in the tool core and returns what the SDK should
// answer. The tool runs until it ends, the host shuts down, or
// req.Cancelled closes (then the tool does what Config.OnCancel says, and
// a tool that noticed writes no result, as the reference server's).
// Otherwise ctx, the SDK's request context, is only noted in
// call_finished's detail when it ended meanwhile (a dropped connection,
// for some SDKs), since before 2026-07-28 disconnect is not cancel. An SDK
// shows a tool no event ids and no delivery, so the result is recorded as
// written (on no stream known, event id 0) when it is handed back to the
// SDK; but a 2026-07-28 call whose connection (req.Stream) has already
// closed has nowhere for its result to go, and it is recorded dropped
// (reason "stream_closed"). A call run as a task (req.Task) names the task
// as its records' stream, and its result is recorded when the SDK hands it
// out ([Host.TaskResultFetched]), not when the SDK stores it. emit may be
// nil for charge.
func (h *Host) Call(ctx context.Context, req Request, tool string, args json.RawMessage, emit tools.Emit) tools.Outcome {
	h.inflight.Add(1)
	defer h.inflight.Add(-1)
	var gone <-chan struct{}
	if req.Stream != "" {
		gone = h.stream(req.Stream)
	}
	client := req.Client
	if client == "" {
		client = h.clientOf(req.Session)
	}
	c := tools.Call{Tool: tool, OrderID: tools.OrderID(args), Session: req.Session, Client: client, RequestID: req.RequestID, Task: req.Task}
	if c.Task != "" {
		h.mu.Lock()
		h.tasks[c.Task] = c
		h.mu.Unlock()
	}
	out := h.tools.RunRequest(h.life, req.Cancelled, c, args, emit)
	if out.Interrupted {
		out = tools.Failure(reasonShutdown, errShutdown)
	}
	if err := ctx.Err(); err != nil && !out.Cancelled {
		out.Detail = "request context ended during the call: " + err.Error()
	}
	switch {
	case out.Cancelled, c.Task != "":
	case closed(gone):
		h.record(c.ResultDropped(out.IsError, "stream_closed"))
	default:
		h.record(c.ResultWritten("", 0, out.IsError))
	}
	h.record(c.Finished(out))
	return out
}

// TaskResultFetched records that the SDK is handing out the result of the
// call task runs (tasks/result), as written on stream task:<id>; a task
// no call of this host ran records nothing.
func (h *Host) TaskResultFetched(task string, isError bool) {
	h.mu.Lock()
	c, ok := h.tasks[task]
	h.mu.Unlock()
	if ok {
		h.record(c.ResultWritten("task:"+task, 0, isError))
	}
}

// closed reports whether ch (nil: never) has closed.
func closed(ch <-chan struct{}) bool {
	if ch == nil {
		return false
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// Emit adapts an SDK's way of sending progress notification seq of total
// to the tool core. The event is recorded before it is handed to the SDK,
// with no stream and no event id (an SDK shows neither). A notification
// the SDK refuses is logged and the tool goes on: it was emitted, and
// whether it arrived is what the checker measures.
func (h *Host) Emit(req Request, send func(seq, total int) error) tools.Emit {
	return func(seq, total int, recordEmitted func(string, int64)) error {
		recordEmitted("", 0)
		if err := send(seq, total); err != nil {
			h.log.Warn("progress notification refused", "session", req.Session, "seq", seq, "err", err)
		}
		return nil
	}
}

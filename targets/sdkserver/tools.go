package sdkserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// recordTimeout bounds one ledger write, so that a stalled ledger service
// cannot hold a tool forever.
const recordTimeout = 30 * time.Second

// ToolsConfig configures [NewTools].
type ToolsConfig struct {
	Recorder sideeffects.Recorder // nil = sideeffects.NewMemory()
	Source   string               // Record.Source of every record
	Clock    runclock.Clock       // zero = a clock starting now
	Logger   *slog.Logger         // nil = discard
	// DefaultChargeDuration is how long a charge runs when the call gives
	// no duration_ms.
	DefaultChargeDuration time.Duration
}

// Request identifies one tool invocation on the server: the SDK's session
// id and the JSON-RPC request id ("" when the SDK did not let it through).
type Request struct {
	Session   string
	RequestID string
}

// Result is what a tool hands back to its SDK.
type Result struct {
	Text       string
	Structured map[string]any
	IsError    bool
}

// Tools runs the charge and chatty tools and writes their ledger records.
// It also records the session lifecycle an SDK exposes. It is safe for
// concurrent use.
type Tools struct {
	rec      sideeffects.Recorder
	source   string
	clock    runclock.Clock
	log      *slog.Logger
	charge   time.Duration
	inflight atomic.Int64
	stop     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	charged  map[string]bool   // idempotency keys already charged
	sessions map[string]string // open session -> client name
	closing  map[string]string // session -> reason noted before it closed
	closed   map[string]bool
}

// NewTools returns tools writing to cfg.Recorder.
func NewTools(cfg ToolsConfig) *Tools {
	if cfg.Recorder == nil {
		cfg.Recorder = sideeffects.NewMemory()
	}
	if cfg.Clock.Base().IsZero() {
		cfg.Clock = runclock.Start()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Tools{
		rec: cfg.Recorder, source: cfg.Source, clock: cfg.Clock, log: cfg.Logger,
		charge: cfg.DefaultChargeDuration, stop: make(chan struct{}),
		charged: map[string]bool{}, sessions: map[string]string{},
		closing: map[string]string{}, closed: map[string]bool{},
	}
}

// Inflight is the number of tool invocations running now.
func (t *Tools) Inflight() int64 { return t.inflight.Load() }

// Sessions is the number of sessions opened and not yet closed.
func (t *Tools) Sessions() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// openSessions lists the open sessions.
func (t *Tools) openSessions() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Sorted(maps.Keys(t.sessions))
}

// HasSession reports whether session was opened and has not closed.
func (t *Tools) HasSession(session string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.sessions[session]
	return ok
}

// Shutdown ends every running tool: each records its call as finished with
// an error (reason "shutdown") and returns an error result. Later calls
// fail the same way. It is idempotent.
func (t *Tools) Shutdown() { t.stopOnce.Do(func() { close(t.stop) }) }

func (t *Tools) stopping() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// record writes r, stamped with the source and the run clock. It is
// detached from the request's context: a dropped connection must not stop
// the ledger from hearing what the tool did.
func (t *Tools) record(r sideeffects.Record) error {
	r.Source = t.source
	r.TUS = t.clock.Micros()
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := t.rec.Record(ctx, r); err != nil {
		t.log.Error("ledger write failed", "kind", r.Kind, "session", r.Session, "err", err)
		return fmt.Errorf("ledger %s: %w", r.Kind, err)
	}
	return nil
}

// SessionOpened records that initialize created session for client (its
// clientInfo.name) at the negotiated protocol version.
func (t *Tools) SessionOpened(session, client, protocol string) {
	t.mu.Lock()
	t.sessions[session] = client
	t.mu.Unlock()
	_ = t.record(sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: session, Client: client, Detail: protocol})
}

// NoteClosing remembers why session is about to close, for
// [Tools.SessionClosed] to record.
func (t *Tools) NoteClosing(session, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.closing[session]; !ok {
		t.closing[session] = reason
	}
}

// SessionClosed records that session ended, once, and only for a session
// [Tools.SessionOpened] saw. The reason is the one noted with
// [Tools.NoteClosing], "shutdown" after [Tools.Shutdown], or fallback.
func (t *Tools) SessionClosed(session, fallback string) {
	t.mu.Lock()
	_, open := t.sessions[session]
	if !open || t.closed[session] {
		t.mu.Unlock()
		return
	}
	t.closed[session] = true
	delete(t.sessions, session)
	reason, noted := t.closing[session]
	delete(t.closing, session)
	t.mu.Unlock()
	if !noted {
		reason = fallback
		if t.stopping() {
			reason = "shutdown"
		}
	}
	_ = t.record(sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: session, Reason: reason})
}

func (t *Tools) clientOf(session string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[session]
}

// wait sleeps for d unless the tools shut down first; it reports whether
// the whole duration passed. The request context is deliberately not
// watched: disconnect is not cancel.
func (t *Tools) wait(d time.Duration) bool {
	if d <= 0 {
		return !t.stopping()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.stop:
		return false
	}
}

// contextNote tells, for call_finished, whether the SDK ended the request's
// context while the tool ran (a dropped connection, for some SDKs).
func contextNote(ctx context.Context) string {
	if err := ctx.Err(); err != nil {
		return "request context ended during the call: " + err.Error()
	}
	return ""
}

func errorResult(err error) Result {
	return Result{Text: err.Error(), IsError: true}
}

// finish records call_finished and result_written, and returns res (or an
// error result when the ledger refused the records).
func (t *Tools) finish(ctx context.Context, req Request, tool, orderID string, res Result, reason string) Result {
	if err := t.record(sideeffects.Record{
		Kind: sideeffects.KindCallFinished, Tool: tool, OrderID: orderID, Session: req.Session,
		RequestID: req.RequestID, IsError: res.IsError, Reason: reason, Detail: contextNote(ctx),
	}); err != nil {
		res = errorResult(err)
	}
	if err := t.record(sideeffects.Record{
		Kind: sideeffects.KindResultWritten, Session: req.Session, RequestID: req.RequestID, IsError: res.IsError,
	}); err != nil {
		res = errorResult(err)
	}
	return res
}

func (t *Tools) start(req Request, tool, orderID string) error {
	return t.record(sideeffects.Record{
		Kind: sideeffects.KindCallStarted, Tool: tool, OrderID: orderID, Session: req.Session,
		Client: t.clientOf(req.Session), RequestID: req.RequestID,
	})
}

// Charge runs the charge tool: call_started, then after the call's
// duration exactly one charge (or charge_deduplicated when the idempotency
// key was charged before), call_finished and result_written.
func (t *Tools) Charge(ctx context.Context, req Request, raw json.RawMessage) Result {
	args, err := ParseCharge(raw)
	if err != nil {
		return errorResult(err)
	}
	t.inflight.Add(1)
	defer t.inflight.Add(-1)
	if err := t.start(req, mcpwire.ToolCharge, args.OrderID); err != nil {
		return errorResult(err)
	}
	d := t.charge
	if args.DurationMS > 0 {
		d = time.Duration(args.DurationMS) * time.Millisecond
	}
	if !t.wait(d) {
		res := errorResult(fmt.Errorf("charge %s: server shutting down", args.OrderID))
		return t.finish(ctx, req, mcpwire.ToolCharge, args.OrderID, res, "shutdown")
	}
	res, err := t.book(req, args)
	if err != nil {
		return t.finish(ctx, req, mcpwire.ToolCharge, args.OrderID, errorResult(err), "ledger")
	}
	return t.finish(ctx, req, mcpwire.ToolCharge, args.OrderID, res, "")
}

// book records the charge itself, at most once per idempotency key.
func (t *Tools) book(req Request, args mcpwire.ChargeArgs) (Result, error) {
	key := args.IdempotencyKey
	t.mu.Lock()
	dup := key != "" && t.charged[key]
	if key != "" {
		t.charged[key] = true
	}
	t.mu.Unlock()
	r := sideeffects.Record{
		Kind: sideeffects.KindCharge, OrderID: args.OrderID, AmountCents: args.AmountCents,
		IdempotencyKey: key, Session: req.Session, Client: t.clientOf(req.Session), RequestID: req.RequestID,
	}
	if dup {
		r = sideeffects.Record{
			Kind: sideeffects.KindChargeDeduplicated, OrderID: args.OrderID, IdempotencyKey: key,
			Session: req.Session, RequestID: req.RequestID,
		}
	}
	if err := t.record(r); err != nil {
		if key != "" && !dup {
			t.mu.Lock()
			delete(t.charged, key)
			t.mu.Unlock()
		}
		return Result{}, err
	}
	return Result{
		Text: fmt.Sprintf("charged order %s: %d cents", args.OrderID, args.AmountCents),
		Structured: map[string]any{
			"order_id": args.OrderID, "amount_cents": args.AmountCents, "deduplicated": dup,
		},
	}, nil
}

// Emit sends progress notification seq of total through the SDK.
type Emit func(seq, total int) error

// Chatty runs the chatty tool: call_started, then for seq 1..events (one
// every interval) event_emitted followed by emit, then call_finished and
// result_written. An event the SDK refuses is logged and the tool goes on:
// it was emitted, and whether it arrived is what the checker measures.
func (t *Tools) Chatty(ctx context.Context, req Request, raw json.RawMessage, emit Emit) Result {
	args, err := ParseChatty(raw)
	if err != nil {
		return errorResult(err)
	}
	t.inflight.Add(1)
	defer t.inflight.Add(-1)
	if err := t.start(req, mcpwire.ToolChatty, ""); err != nil {
		return errorResult(err)
	}
	interval := time.Duration(args.IntervalMS) * time.Millisecond
	for seq := 1; seq <= args.Events; seq++ {
		if !t.wait(interval) {
			res := errorResult(fmt.Errorf("chatty: server shutting down after %d events", seq-1))
			return t.finish(ctx, req, mcpwire.ToolChatty, "", res, "shutdown")
		}
		if err := t.record(sideeffects.Record{
			Kind: sideeffects.KindEventEmitted, Session: req.Session, RequestID: req.RequestID, Seq: int64(seq),
		}); err != nil {
			return t.finish(ctx, req, mcpwire.ToolChatty, "", errorResult(err), "ledger")
		}
		if err := emit(seq, args.Events); err != nil {
			t.log.Warn("progress notification refused", "session", req.Session, "seq", seq, "err", err)
		}
	}
	res := Result{
		Text:       fmt.Sprintf("emitted %d events", args.Events),
		Structured: map[string]any{"events": args.Events},
	}
	return t.finish(ctx, req, mcpwire.ToolChatty, "", res, "")
}

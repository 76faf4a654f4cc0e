package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Cursor store names (Options.Cursor).
const (
	CursorMemory = "memory"
	CursorFile   = "file"
)

// Resumable runs one logical client by the incident record's decision
// procedure (see [Classify]), keeping its cursor in the store Options.Cursor
// names. Started again on a file cursor it adopts the saved session, skips
// completed calls and resumes the call in flight by GET with Last-Event-ID;
// a call in flight with no event id persisted is recorded unknown, never
// invoked again. See [Run].
func Resumable(ctx context.Context, opts workload.Options, c workload.Client) error {
	a, err := newAgent(TargetResumable, opts, c)
	if err != nil {
		return err
	}
	store, err := OpenStore(opts, c.ID)
	if err != nil {
		return err
	}
	cur, err := store.Load()
	if err != nil {
		return fmt.Errorf("client %s: %w", c.ID, err)
	}
	r := &resumable{agent: a, store: store, cur: cur}
	return a.finish(r.run(ctx))
}

// OpenStore returns the cursor store opts.Cursor names for a client: memory
// (also when unset) or file, in opts.CursorDir.
func OpenStore(opts workload.Options, client string) (Store, error) {
	switch opts.Cursor {
	case "", CursorMemory:
		return NewMemoryStore(client), nil
	case CursorFile:
		if opts.CursorDir == "" {
			return nil, errors.New("client: file cursor needs a cursor directory")
		}
		return NewFileStore(opts.CursorDir, client), nil
	}
	return nil, fmt.Errorf("client: unknown cursor store %q (want %s or %s)", opts.Cursor, CursorMemory, CursorFile)
}

type resumable struct {
	*agent
	store Store
	cur   Cursor
}

func (r *resumable) run(ctx context.Context) error {
	r.start()
	if r.cur.InFlight != nil {
		if err := r.recoverInFlight(ctx); err != nil {
			return err
		}
	}
	for _, call := range r.client.Calls {
		if _, done := r.cur.Completed(call.ID); done {
			continue
		}
		if err := r.call(ctx, call); err != nil {
			return err
		}
	}
	return nil
}

// start writes client_start and takes over what the cursor remembers.
func (r *resumable) start() {
	detail := "fresh"
	if known := len(r.cur.Done); known > 0 || r.cur.InFlight != nil || r.cur.Session != "" {
		if r.cur.InFlight != nil {
			known++
		}
		detail = fmt.Sprintf("restarted: resumed %d calls", known)
	}
	r.record(history.Record{Kind: history.KindClientStart, Target: TargetResumable, Detail: detail})
	r.nextID = max(r.cur.NextRequestID, 1)
	if r.cur.Session != "" {
		r.conn.adopt(r.cur.Session, r.cur.Protocol)
		if r.conn.legacyTasks && len(r.cur.TaskTools) > 0 {
			r.conn.taskTools = map[string]bool{}
			for _, t := range r.cur.TaskTools {
				r.conn.taskTools[t] = true
			}
		}
	}
}

func (r *resumable) save() error {
	r.cur.Client = r.client.ID
	r.cur.NextRequestID = r.nextID
	if err := r.store.Save(r.cur); err != nil {
		return fmt.Errorf("client %s: %w", r.client.ID, err)
	}
	return nil
}

// recoverInFlight resolves the call a previous run left in flight: resume
// its stream if an event id was persisted, otherwise record it unknown.
func (r *resumable) recoverInFlight(ctx context.Context) error {
	fl := *r.cur.InFlight
	call := workload.Call{ID: fl.Call}
	for _, c := range r.client.Calls {
		if c.ID == fl.Call {
			call = c
		}
	}
	s := &stream{call: call, session: r.cur.Session, requestID: fl.RequestID, attempt: fl.Attempt, lastID: fl.LastEventID}
	s.persist = r.persister()
	if fl.TaskSession != "" {
		s.session = fl.TaskSession // the call's session, whichever the client holds now
	}
	if fl.TaskID != "" && (r.modern() || fl.TaskLegacy) {
		if err := r.ensureSession(ctx); err != nil {
			return r.halt(ctx, s, err)
		}
		return r.pollTask(ctx, s, &taskHandle{id: fl.TaskID, legacy: fl.TaskLegacy})
	}
	if fl.LastEventID == "" || !r.conn.live {
		return r.settle(s, unknownOutcome("restarted with no event id persisted for the call's stream"))
	}
	_, err := r.follow(ctx, s, nil, Close{LastEventID: fl.LastEventID, Err: errRestarted})
	return err
}

// errRestarted is the break a restarted client resumes from: its previous
// process ended mid-stream.
var errRestarted = errors.New("client restarted mid-stream")

// call makes one call until it has an outcome, invoking it again only when
// it is idempotent and its session was lost.
func (r *resumable) call(ctx context.Context, call workload.Call) error {
	var prev *stream
	for attempt := 1; ; attempt++ {
		if err := r.ensureSession(ctx); err != nil {
			switch {
			case prev != nil:
				return r.halt(ctx, prev, err)
			case ctx.Err() != nil:
				return err
			}
			// Never invoked: no session could be opened for it, so the
			// call failed, and nothing of it can have run. The next call
			// tries again.
			return r.settle(&stream{call: call}, &outcome{kind: history.KindFail,
				reason: fmt.Sprintf("no session could be opened after %d attempts: %v", r.opts.Backoff.Retries+1, err)})
		}
		s, err := r.begin(call, attempt)
		if err != nil {
			return err
		}
		x, err := r.conn.post(ctx, s.req)
		var cl Close
		if err != nil {
			if ctx.Err() != nil {
				return r.halt(ctx, s, ctx.Err())
			}
			cl = Close{Err: err}
			r.breakRecord(s, cl)
		}
		again, err := r.follow(ctx, s, x, cl)
		if err != nil || !again {
			return err
		}
		if attempt > r.opts.Backoff.Retries {
			why := "session lost"
			if r.modern() {
				why = "stream broke"
			}
			return r.settle(s, unknownOutcome(fmt.Sprintf("%s on all %d attempts", why, attempt)))
		}
		prev = s
	}
}

// ensureSession opens a session if the client holds none, retrying with
// backoff.
func (r *resumable) ensureSession(ctx context.Context) error {
	if r.conn.live {
		return nil
	}
	for attempt := 1; ; attempt++ {
		err := r.openSession(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil || attempt > r.opts.Backoff.Retries {
			return err
		}
		r.log.Warn("initialize failed", "attempt", attempt, "err", err)
		if err := runclock.Sleep(ctx, r.backoff(attempt, 0)); err != nil {
			return err
		}
	}
	r.cur.Session, r.cur.Protocol = r.conn.session, r.conn.protocol
	r.cur.TaskTools = slices.Sorted(maps.Keys(r.conn.taskTools))
	return r.save()
}

// begin persists the intent to invoke, then records the invoke.
func (r *resumable) begin(call workload.Call, attempt int) (*stream, error) {
	s, err := r.newStream(call, attempt)
	if err != nil {
		return nil, err
	}
	s.persist = r.persister()
	r.cur.InFlight = &InFlight{Call: call.ID, RequestID: s.requestID, Attempt: attempt}
	if err := r.save(); err != nil {
		return nil, err
	}
	r.invokeRecord(s)
	return s, nil
}

func (r *resumable) persister() func(string) error {
	return func(id string) error {
		r.cur.InFlight.LastEventID = id
		return r.save()
	}
}

// follow reads a call's stream (x, or nothing when the stream has already
// broken with cl) and acts on every break until the call has an outcome. It
// reports whether the call should be invoked again on a new session.
func (r *resumable) follow(ctx context.Context, s *stream, x *exchange, cl Close) (again bool, err error) {
	tries := 0
	for {
		if x != nil {
			out, c, progressed, err := r.read(ctx, s, x)
			if err != nil {
				return false, r.halt(ctx, s, err)
			}
			if out != nil && out.task != nil {
				return false, r.pollTask(ctx, s, out.task)
			}
			if out != nil {
				return false, r.settle(s, out)
			}
			if progressed {
				tries = 0
			}
			cl = c
			r.breakRecord(s, cl)
		}
		if r.modern() {
			return r.modernBreak(ctx, s, cl)
		}
		act := Classify(cl)
		switch act.Kind {
		case Stop:
			return false, r.stop(s)
		case Reinitialize:
			return r.sessionGone(s)
		case GiveUp:
			if act.Gap != nil {
				r.surfaceGap(s, act.Gap)
			}
			return false, r.settle(s, unknownOutcome(act.Reason))
		}
		// After a gap the server named the cursor it still honours: any
		// wait lets more events past its retention, and a stream that emits
		// faster than the backoff would be chased 410 after 410.
		atOnce := act.Kind == ReconnectAtHead
		if atOnce {
			if err := r.gap(s, act.Gap); err != nil {
				return false, r.halt(ctx, s, err)
			}
		}
		if tries++; tries > r.opts.Backoff.Retries {
			return false, r.settle(s, unknownOutcome(fmt.Sprintf("gave up after %d reconnects: %s", tries-1, cl.Class())))
		}
		if x, cl, err = r.reconnect(ctx, s, tries, atOnce); err != nil {
			return false, r.halt(ctx, s, err)
		}
	}
}

// reconnect waits its backoff (none atOnce), then asks for the stream after
// the last persisted event id. It returns the exchange on 200, or the close
// that the failed attempt amounts to.
func (r *resumable) reconnect(ctx context.Context, s *stream, attempt int, atOnce bool) (*exchange, Close, error) {
	var delay time.Duration
	if !atOnce {
		delay = r.backoff(attempt, s.retry)
	}
	if err := runclock.Sleep(ctx, delay); err != nil {
		return nil, Close{}, err
	}
	rec := history.Record{
		Kind: history.KindReconnect, Call: s.call.ID, Session: s.session, RequestID: s.requestID,
		Attempt: attempt, LastEventID: mcp.EventNumber(s.lastID), DelayUS: delay.Microseconds(),
	}
	x, err := r.conn.resume(ctx, s.lastID)
	switch {
	case ctx.Err() != nil:
		return nil, Close{}, ctx.Err()
	case err != nil:
		rec.Result, rec.Detail = "error", err.Error()
		r.record(rec)
		return nil, Close{Err: err, LastEventID: s.lastID}, nil
	case x.resp.StatusCode != 200:
		err := okStatus(x.resp)
		x.close()
		cl := Close{Status: x.resp.StatusCode, LastEventID: s.lastID}
		var se *statusError
		if errors.As(err, &se) {
			cl.Body = se.body
		}
		rec.Result, rec.Detail = cl.Class(), string(cl.Body)
		r.record(rec)
		return nil, cl, nil
	}
	rec.Result = "ok"
	r.record(rec)
	r.record(history.Record{Kind: history.KindResume, Call: s.call.ID, Session: s.session, RequestID: s.requestID, LastEventID: mcp.EventNumber(s.lastID)})
	return x, Close{}, nil
}

// gap surfaces the events the server reported lost and moves the cursor
// to the head it named.
func (r *resumable) gap(s *stream, g *Gap) error {
	r.surfaceGap(s, g)
	if err := s.persist(g.To); err != nil {
		return err
	}
	s.lastID = g.To
	return nil
}

// surfaceGap records a gap; To "" records it open-ended.
func (r *resumable) surfaceGap(s *stream, g *Gap) {
	r.record(history.Record{
		Kind: history.KindGap, Call: s.call.ID, Session: s.session, RequestID: s.requestID,
		FromEventID: mcp.EventNumber(g.From), ToEventID: mcp.EventNumber(g.To), Reason: g.Reason,
	})
}

// modernBreak handles a broken 2026-07-28 call. There is nothing to resume:
// closing the stream cancelled the call, which may have committed its side
// effect before it noticed. A call that is harmless to repeat (idempotent,
// or a charge carrying an idempotency key the server deduplicates) is
// issued again after the backoff; any other call's outcome is unknown and
// it is never issued again.
func (r *resumable) modernBreak(ctx context.Context, s *stream, cl Close) (bool, error) {
	if !s.call.IsIdempotent() {
		return false, r.settle(s, unknownOutcome(fmt.Sprintf(
			"stream broke at %s (%s): closing it cancelled the call, which may have committed; not issuing a non-idempotent call without an idempotency key again",
			mcp.Version20260728, cl.Class())))
	}
	if err := runclock.Sleep(ctx, r.backoff(s.attempt, s.retry)); err != nil {
		return false, r.halt(ctx, s, err)
	}
	return true, nil
}

// sessionGone handles a 404: the session is dropped; the call is invoked
// again if that is harmless, and is unknown otherwise.
func (r *resumable) sessionGone(s *stream) (bool, error) {
	r.dropSession("status_404")
	r.cur.Session, r.cur.Protocol = "", ""
	if s.call.IsIdempotent() {
		return true, r.save()
	}
	return false, r.settle(s, unknownOutcome("session lost (404) with the call in flight; not invoking a non-idempotent call again"))
}

// stop handles a server close event: the session is over and the client
// makes no further calls.
func (r *resumable) stop(s *stream) error {
	r.dropSession("close_event")
	r.cur.Session, r.cur.Protocol = "", ""
	if err := r.settle(s, unknownOutcome("server close event with the call in flight")); err != nil {
		return err
	}
	return errStopped
}

// settle makes the call's outcome durable, then records it.
func (r *resumable) settle(s *stream, out *outcome) error {
	r.cur.Done = append(r.cur.Done, Completed{Call: s.call.ID, Outcome: out.kind})
	r.cur.InFlight = nil
	err := r.save()
	r.outcomeRecord(s, out)
	return err
}

// halt ends a call early because ctx ended, a session could not be opened
// or the cursor could not be saved. With a file cursor and ctx ended, the
// call stays in flight in the cursor for the next run to resume; otherwise
// it is settled unknown.
func (r *resumable) halt(ctx context.Context, s *stream, err error) error {
	if ctx.Err() != nil && r.opts.Cursor == CursorFile {
		r.log.Info("stopping with a call in flight", "call", s.call.ID, "last_event_id", s.lastID)
		return err
	}
	return errors.Join(err, r.settle(s, unknownOutcome(fmt.Sprintf("stopped: %v", err))))
}

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// refusing fails every record of one kind.
type refusing struct {
	*sideeffects.Memory
	kind sideeffects.Kind
}

func (f refusing) Record(ctx context.Context, r sideeffects.Record) error {
	if r.Kind == f.kind {
		return errors.New("ledger unavailable")
	}
	return f.Memory.Record(ctx, r)
}

// failingKeys cannot reserve a key.
type failingKeys struct{}

func (failingKeys) ReserveKey(string) (bool, error) { return false, errors.New("journal full") }
func (failingKeys) ReleaseKey(string) error         { return nil }

func newLedger(rec sideeffects.Recorder) Ledger {
	return Ledger{Recorder: rec, Source: "test", Clock: runclock.Start(), Logger: slog.New(slog.DiscardHandler)}
}

func newRunner(rec sideeffects.Recorder) *Runner {
	return NewRunner(Config{Ledger: newLedger(rec)})
}

var call = Call{Tool: mcp.ToolCharge, OrderID: "o-1", Session: "s1", Client: "alice", RequestID: "7"}

func chattyCall() Call {
	c := call
	c.Tool, c.OrderID = mcp.ToolChatty, ""
	return c
}

func kinds(recs []sideeffects.Record) []sideeffects.Kind {
	var out []sideeffects.Kind
	for _, r := range recs {
		out = append(out, r.Kind)
	}
	return out
}

func resultOf(t *testing.T, o Outcome) map[string]any {
	t.Helper()
	raw, err := o.JSON()
	require.NoError(t, err)
	var sc map[string]any
	require.NoError(t, json.Unmarshal(raw, &sc))
	return sc
}

// TestChargeRecordsOnceAndDeduplicates pins that a charge and a
// deduplicated charge carry the same fields.
func TestChargeRecordsOnceAndDeduplicates(t *testing.T) {
	m := sideeffects.NewMemory()
	r := newRunner(m)
	args := json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k","duration_ms":1}`)
	first := r.Run(context.Background(), call, args, nil)
	second := r.Run(context.Background(), call, args, nil)

	assert.Equal(t, map[string]any{"charged": true, "order_id": "o-1", "amount_cents": 5.0}, resultOf(t, first))
	assert.Equal(t, true, resultOf(t, second)["deduplicated"])
	assert.Equal(t, []sideeffects.Kind{
		sideeffects.KindCallStarted, sideeffects.KindCharge, sideeffects.KindCallStarted, sideeffects.KindChargeDeduplicated,
	}, kinds(m.Records()))
	charge, dedup := m.Records()[1], m.Records()[3]
	dedup.Kind, dedup.ID, dedup.N, dedup.TUS = charge.Kind, charge.ID, charge.N, charge.TUS
	assert.Equal(t, charge, dedup, "the same fields but the kind")
	assert.Equal(t, sideeffects.Record{ID: charge.ID, N: charge.N, TUS: charge.TUS, Kind: sideeffects.KindCharge,
		Source: "test", Session: "s1", Client: "alice", RequestID: "7", Tool: mcp.ToolCharge, OrderID: "o-1",
		AmountCents: 5, IdempotencyKey: "k"}, charge)
}

func TestChargeWithoutKeyChargesEveryTime(t *testing.T) {
	m := sideeffects.NewMemory()
	r := newRunner(m)
	for range 2 {
		out := r.Run(context.Background(), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`), nil)
		assert.Nil(t, resultOf(t, out)["deduplicated"])
	}
	assert.Equal(t, 2, m.Count(sideeffects.KindCharge))
}

func TestChargeWhenTheLedgerRefuses(t *testing.T) {
	m := sideeffects.NewMemory()
	keys := NewMemoryKeys()
	args := json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k"}`)
	refused := NewRunner(Config{Ledger: newLedger(refusing{m, sideeffects.KindCharge}), Keys: keys}).
		Run(context.Background(), call, args, nil)
	assert.True(t, refused.IsError)
	assert.Equal(t, "ledger_failed", refused.Reason)
	assert.Equal(t, "ledger_failed", resultOf(t, refused)["error"])
	assert.Contains(t, resultOf(t, refused)["message"], "ledger unavailable")

	out := NewRunner(Config{Ledger: newLedger(m), Keys: keys}).Run(context.Background(), call, args, nil)
	assert.Nil(t, resultOf(t, out)["deduplicated"], "a refused charge does not claim its key")
	assert.Equal(t, 1, m.Count(sideeffects.KindCharge))
}

// TestOnlyAFailedChargeRecordMatters checks that a tool goes on when the
// ledger misses an observation: it cannot be taken back.
func TestOnlyAFailedChargeRecordMatters(t *testing.T) {
	for _, kind := range []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindEventEmitted} {
		m := sideeffects.NewMemory()
		r := newRunner(refusing{m, kind})
		emit := func(_, _ int, recordEmitted func(string, int64)) error { recordEmitted("", 0); return nil }
		out := r.Run(context.Background(), chattyCall(), json.RawMessage(`{"events":3}`), emit)
		assert.False(t, out.IsError, "%s refused", kind)
		assert.Equal(t, map[string]any{"emitted": 3.0}, resultOf(t, out))
		out = r.Run(context.Background(), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`), nil)
		assert.False(t, out.IsError, "%s refused", kind)
		assert.Equal(t, 1, m.Count(sideeffects.KindCharge))
	}
}

func TestChargeWhenTheKeysFail(t *testing.T) {
	m := sideeffects.NewMemory()
	r := NewRunner(Config{Ledger: newLedger(m), Keys: failingKeys{}})
	out := r.Run(context.Background(), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k"}`), nil)
	assert.True(t, out.IsError)
	assert.Equal(t, "store_failed", out.Reason)
	assert.Zero(t, m.Count(sideeffects.KindCharge))
}

func TestDefaultChargeDuration(t *testing.T) {
	r := NewRunner(Config{Ledger: newLedger(sideeffects.NewMemory()), DefaultChargeDuration: 30 * time.Millisecond})
	start := time.Now()
	r.Run(context.Background(), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`), nil)
	assert.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
}

// TestBadArgumentsAreACall pins that a call the tool refuses is started
// like any other, and never charges or emits.
func TestBadArgumentsAreACall(t *testing.T) {
	m := sideeffects.NewMemory()
	r := newRunner(m)
	out := r.Run(context.Background(), call, json.RawMessage(`{"order_id":"o-1"}`), nil)
	assert.True(t, out.IsError)
	assert.Equal(t, "invalid_arguments", out.Reason)
	out = r.Run(context.Background(), chattyCall(), json.RawMessage(`{"events":-1}`),
		func(int, int, func(string, int64)) error { panic("emitted") })
	assert.Equal(t, "invalid_arguments", out.Reason)
	assert.Equal(t, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCallStarted}, kinds(m.Records()))

	out = r.Run(context.Background(), Call{Tool: "refund"}, nil, nil)
	assert.True(t, out.IsError)
	assert.Len(t, m.Records(), 2, "an unknown tool is no call")
}

// TestInterruptedToolsStillRecord checks that a tool whose context ended
// returns no result, and that what it records gets through all the same.
func TestInterruptedToolsStillRecord(t *testing.T) {
	m := sideeffects.NewMemory()
	r := newRunner(m)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := r.Run(ctx, call, json.RawMessage(`{"order_id":"o-1","amount_cents":5,"duration_ms":60000}`), nil)
	assert.True(t, out.Interrupted)
	out = r.Run(ctx, chattyCall(), json.RawMessage(`{"events":3}`),
		func(int, int, func(string, int64)) error { panic("emitted") })
	assert.True(t, out.Interrupted)
	assert.Equal(t, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCallStarted}, kinds(m.Records()))
}

// TestAnEndedContextWinsOverAnElapsedDuration: a request that can be
// cancelled waits on a timer; when its context has already ended and its
// duration is spent too, the tool is interrupted, never committed (a select
// between the two would pick at random).
func TestAnEndedContextWinsOverAnElapsedDuration(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 50 {
		m := sideeffects.NewMemory()
		r := NewRunner(Config{Ledger: newLedger(m), OnCancel: OnCancelCommitThenNotice})
		out := r.RunRequest(ctx, make(chan struct{}), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5,"duration_ms":0}`), nil)
		require.True(t, out.Interrupted)
		require.Equal(t, []sideeffects.Kind{sideeffects.KindCallStarted}, kinds(m.Records()), "no charge after the interruption")
	}
}

// TestChattyRecordsWhatTheHostReports checks that event_emitted carries the
// stream and event id the host reports, and is written before the host
// lets the event out.
func TestChattyRecordsWhatTheHostReports(t *testing.T) {
	m := sideeffects.NewMemory()
	r := newRunner(m)
	emit := func(seq, total int, recordEmitted func(string, int64)) error {
		assert.Equal(t, 3, total)
		before := m.Count(sideeffects.KindEventEmitted)
		recordEmitted("post-1", int64(100+seq))
		assert.Equal(t, before+1, m.Count(sideeffects.KindEventEmitted))
		return nil
	}
	out := r.Run(context.Background(), chattyCall(), json.RawMessage(`{"events":3}`), emit)
	assert.Equal(t, map[string]any{"emitted": 3.0}, resultOf(t, out))
	events := m.Of(sideeffects.KindEventEmitted)
	require.Len(t, events, 3)
	for i, e := range events {
		assert.EqualValues(t, i+1, e.Seq)
		assert.EqualValues(t, 101+i, e.EventID)
		assert.Equal(t, "post-1", e.Stream)
		assert.Equal(t, mcp.ToolChatty, e.Tool)
		assert.Equal(t, "alice", e.Client)
		assert.Equal(t, "7", e.RequestID)
	}
}

func TestChattyWhenEmittingFails(t *testing.T) {
	tests := []struct {
		err     error
		isError bool
		reason  string
	}{
		{fmt.Errorf("append: %w", ErrSessionGone), false, "session_gone"},
		{errors.New("disk full"), true, "emit_failed"},
	}
	for _, tc := range tests {
		r := newRunner(sideeffects.NewMemory())
		emit := func(seq, _ int, recordEmitted func(string, int64)) error {
			if seq == 3 {
				return tc.err
			}
			recordEmitted("", 0)
			return nil
		}
		out := r.Run(context.Background(), chattyCall(), json.RawMessage(`{"events":5}`), emit)
		assert.Equal(t, tc.isError, out.IsError, tc.reason)
		assert.Equal(t, tc.reason, out.Reason)
		if !tc.isError {
			assert.Equal(t, map[string]any{"emitted": 2.0}, resultOf(t, out))
		}
	}
}

// slowFirstEvent takes hold to record the first event.
type slowFirstEvent struct {
	*sideeffects.Memory
	hold time.Duration
}

func (s slowFirstEvent) Record(ctx context.Context, r sideeffects.Record) error {
	if r.Kind == sideeffects.KindEventEmitted && r.Seq == 1 {
		time.Sleep(s.hold)
	}
	return s.Memory.Record(ctx, r)
}

// TestChattyPacesBySchedule holds the ledger on the first event for longer
// than the next three are due: they go out back to back once it returns,
// instead of one interval after another.
func TestChattyPacesBySchedule(t *testing.T) {
	const interval = 100 * time.Millisecond
	r := newRunner(slowFirstEvent{sideeffects.NewMemory(), 5 * interval})
	var mu sync.Mutex
	var sent []time.Time
	emit := func(_, _ int, recordEmitted func(string, int64)) error {
		recordEmitted("", 0)
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, time.Now())
		return nil
	}
	start := time.Now()
	r.Run(context.Background(), chattyCall(), json.RawMessage(fmt.Sprintf(`{"events":5,"interval_ms":%d}`, interval.Milliseconds())), emit)
	require.Len(t, sent, 5)
	assert.Less(t, sent[3].Sub(sent[1]), interval, "events 2 to 4 were overdue: none waited an interval")
	assert.GreaterOrEqual(t, sent[4].Sub(start), 5*interval, "no event before it is due")
}

func TestLedgerStampsEveryRecord(t *testing.T) {
	m := sideeffects.NewMemory()
	l := newLedger(m)
	l.Clock = runclock.New(time.Now().Add(-time.Hour))
	require.NoError(t, l.Record(context.Background(), sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: "s", ID: "mine", Source: "other"}))
	require.NoError(t, l.Record(context.Background(), sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: "s"}))
	recs := m.Records()
	require.Len(t, recs, 2)
	assert.NotEqual(t, "mine", recs[0].ID)
	assert.NotEqual(t, recs[0].ID, recs[1].ID)
	for _, r := range recs {
		assert.Equal(t, "test", r.Source)
		assert.GreaterOrEqual(t, r.TUS, time.Hour.Microseconds(), "on the run's clock")
	}

	err := newLedger(refusing{m, sideeffects.KindCharge}).Record(context.Background(), sideeffects.Record{Kind: sideeffects.KindCharge})
	assert.ErrorContains(t, err, "ledger charge: ledger unavailable")
}

func TestCallRecords(t *testing.T) {
	assert.Equal(t, "ok", call.Finished(Outcome{}).Reason)
	f := call.Finished(Outcome{IsError: true, Reason: "cancelled", Detail: "note"})
	assert.Equal(t, sideeffects.Record{Kind: sideeffects.KindCallFinished, Tool: mcp.ToolCharge, OrderID: "o-1",
		Session: "s1", Client: "alice", RequestID: "7", IsError: true, Reason: "cancelled", Detail: "note"}, f)
	w := call.ResultWritten("post-1", 9, true)
	assert.Equal(t, sideeffects.KindResultWritten, w.Kind)
	assert.Equal(t, "post-1", w.Stream)
	assert.EqualValues(t, 9, w.EventID)
	assert.True(t, w.IsError)
	d := call.ResultDropped(false, "session_gone")
	assert.Equal(t, sideeffects.KindResultDropped, d.Kind)
	assert.Equal(t, "session_gone", d.Reason)
	assert.Equal(t, call.Started().Client, d.Client)
}

func TestOutcomeResult(t *testing.T) {
	res, err := Failure("interrupted_by_restart", nil).Result()
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.JSONEq(t, `{"error":"interrupted_by_restart"}`, string(res.StructuredContent))
	require.Len(t, res.Content, 1)
	assert.Equal(t, string(res.StructuredContent), res.Content[0].Text, "the text repeats the structured content")

	_, err = Outcome{Structured: func() {}}.Result()
	assert.Error(t, err)
}

// TestOnCancel holds each on_cancel mode to what it does with a charge
// cancelled mid-run: the records, in order, and the outcome.
func TestOnCancel(t *testing.T) {
	tests := []struct {
		mode      string
		kinds     []sideeffects.Kind
		cancelled bool // the outcome has no result
		charged   bool
	}{
		{OnCancelStop, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCallCancelled}, true, false},
		{OnCancelCommitThenNotice, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCallCancelled, sideeffects.KindCharge}, true, true},
		{OnCancelIgnore, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCallCancelled, sideeffects.KindCharge}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			m := sideeffects.NewMemory()
			r := NewRunner(Config{Ledger: newLedger(m), OnCancel: tc.mode})
			cancelled := make(chan struct{})
			time.AfterFunc(20*time.Millisecond, func() { close(cancelled) })
			start := time.Now()
			out := r.RunRequest(context.Background(), cancelled, call, json.RawMessage(`{"order_id":"o-1","amount_cents":5,"duration_ms":300}`), nil)
			took := time.Since(start)
			assert.Equal(t, tc.kinds, kinds(m.Records()))
			assert.Equal(t, tc.cancelled, out.Cancelled)
			assert.False(t, out.Interrupted)
			if tc.cancelled {
				assert.Equal(t, reasonCancelled, out.Reason)
				assert.Less(t, took, 250*time.Millisecond, "noticed at the cancellation, not at the end")
			} else {
				assert.GreaterOrEqual(t, took, 300*time.Millisecond, "ignore runs its whole duration")
				assert.Equal(t, true, resultOf(t, out)["charged"])
			}
			recs := m.Records()
			assert.Equal(t, tc.mode, recs[1].Reason, "call_cancelled names the mode")
			assert.Equal(t, "o-1", recs[1].OrderID)
		})
	}
	t.Run("not cancelled", func(t *testing.T) {
		m := sideeffects.NewMemory()
		r := NewRunner(Config{Ledger: newLedger(m), OnCancel: OnCancelCommitThenNotice})
		out := r.RunRequest(context.Background(), make(chan struct{}), call, json.RawMessage(`{"order_id":"o-1","amount_cents":5,"duration_ms":1}`), nil)
		assert.False(t, out.Cancelled)
		assert.Equal(t, []sideeffects.Kind{sideeffects.KindCallStarted, sideeffects.KindCharge}, kinds(m.Records()))
	})
	t.Run("chatty stops", func(t *testing.T) {
		m := sideeffects.NewMemory()
		r := NewRunner(Config{Ledger: newLedger(m), OnCancel: OnCancelCommitThenNotice})
		cancelled := make(chan struct{})
		var n int
		emit := func(seq, total int, rec func(string, int64)) error {
			if n++; n == 3 {
				close(cancelled)
			}
			rec("", 0)
			return nil
		}
		out := r.RunRequest(context.Background(), cancelled, chattyCall(), json.RawMessage(`{"events":10,"interval_ms":1}`), emit)
		assert.True(t, out.Cancelled)
		assert.Equal(t, float64(3), resultOf(t, out)["emitted"])
	})
}

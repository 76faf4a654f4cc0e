package sdkserver

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
)

// flakyLedger refuses records of one kind.
type flakyLedger struct {
	*sideeffects.Memory
	refuse sideeffects.Kind
}

func (f flakyLedger) Record(ctx context.Context, r sideeffects.Record) error {
	if r.Kind == f.refuse {
		return errors.New("ledger unavailable")
	}
	return f.Memory.Record(ctx, r)
}

func kindSeq(m *sideeffects.Memory) []sideeffects.Kind {
	var out []sideeffects.Kind
	for _, r := range m.Records() {
		out = append(out, r.Kind)
	}
	return out
}

var req = Request{Session: "s1", RequestID: "7"}

func TestChargeRecordsOnceAndDeduplicates(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m, Source: "test"})
	tools.SessionOpened("s1", "alice", "2025-11-25")
	args := json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k","duration_ms":1}`)
	first := tools.Charge(context.Background(), req, args)
	second := tools.Charge(context.Background(), req, args)

	assert.False(t, first.IsError)
	assert.Equal(t, false, first.Structured["deduplicated"])
	assert.Equal(t, true, second.Structured["deduplicated"])
	assert.Equal(t, []sideeffects.Kind{
		sideeffects.KindSessionOpened,
		sideeffects.KindCallStarted, sideeffects.KindCharge, sideeffects.KindCallFinished, sideeffects.KindResultWritten,
		sideeffects.KindCallStarted, sideeffects.KindChargeDeduplicated, sideeffects.KindCallFinished, sideeffects.KindResultWritten,
	}, kindSeq(m))
	for _, r := range m.Records()[1:] {
		assert.Equal(t, "s1", r.Session)
		assert.Equal(t, "7", r.RequestID)
		assert.Equal(t, "test", r.Source)
	}
	charge := m.Records()[2]
	assert.Equal(t, "alice", charge.Client)
	assert.EqualValues(t, 5, charge.AmountCents)
}

func TestChargeWithoutKeyChargesEveryTime(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m})
	for range 2 {
		tools.Charge(context.Background(), req, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`))
	}
	assert.Equal(t, 2, m.Count(sideeffects.KindCharge))
}

func TestChargeKeepsRunningWhenTheRequestContextEnds(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m, DefaultChargeDuration: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := tools.Charge(ctx, req, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`))
	assert.False(t, res.IsError)
	assert.Equal(t, 1, m.Count(sideeffects.KindCharge))
	finished := m.Records()[2]
	assert.Equal(t, "request context ended during the call: context canceled", finished.Detail)
}

func TestChargeWhenTheLedgerRefuses(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: flakyLedger{m, sideeffects.KindCharge}})
	args := json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k"}`)
	res := tools.Charge(context.Background(), req, args)
	assert.True(t, res.IsError)
	finished := m.Records()[1]
	assert.Equal(t, sideeffects.KindCallFinished, finished.Kind)
	assert.True(t, finished.IsError)
	assert.Equal(t, "ledger", finished.Reason)

	tools.rec = m
	res = tools.Charge(context.Background(), req, args)
	assert.Equal(t, false, res.Structured["deduplicated"], "a refused charge does not claim its key")
}

func TestShutdownEndsRunningTools(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m, DefaultChargeDuration: time.Hour})
	done := make(chan Result)
	go func() {
		done <- tools.Charge(context.Background(), req, json.RawMessage(`{"order_id":"o","amount_cents":1}`))
	}()
	go func() {
		done <- tools.Chatty(context.Background(), req, json.RawMessage(`{"events":5,"interval_ms":60000}`), func(int, int) error { return nil })
	}()
	require.Eventually(t, func() bool { return tools.Inflight() == 2 }, 5*time.Second, time.Millisecond)
	tools.Shutdown()
	tools.Shutdown()
	for range 2 {
		assert.True(t, (<-done).IsError)
	}
	assert.Zero(t, m.Count(sideeffects.KindCharge))
	assert.Zero(t, m.Count(sideeffects.KindEventEmitted))
	for _, r := range m.Records() {
		if r.Kind == sideeffects.KindCallFinished {
			assert.Equal(t, "shutdown", r.Reason)
		}
	}
}

func TestChattyEmitsNumberedEvents(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m})
	var mu sync.Mutex
	var seqs []int
	res := tools.Chatty(context.Background(), req, json.RawMessage(`{"events":3}`), func(seq, total int) error {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 3, total)
		assert.Equal(t, int64(seq), m.Records()[len(m.Records())-1].Seq, "recorded before it is emitted")
		seqs = append(seqs, seq)
		if seq == 2 {
			return errors.New("refused by the SDK")
		}
		return nil
	})
	assert.False(t, res.IsError)
	assert.Equal(t, []int{1, 2, 3}, seqs)
	assert.Equal(t, 3, m.Count(sideeffects.KindEventEmitted))
}

func TestToolArguments(t *testing.T) {
	tests := []struct {
		tool, args string
		ok         bool
	}{
		{"charge", `{"order_id":"o","amount_cents":1}`, true},
		{"charge", `{"order_id":"o","amount_cents":1,"extra":true}`, true},
		{"charge", `{"amount_cents":1}`, false},
		{"charge", `{"order_id":"o","amount_cents":-1}`, false},
		{"charge", `{"order_id":"o","amount_cents":1,"duration_ms":99999999999}`, false},
		{"charge", `[]`, false},
		{"chatty", ``, true},
		{"chatty", `{"events":3,"interval_ms":5}`, true},
		{"chatty", `{"events":100001}`, false},
		{"chatty", `{"events":1,"interval_ms":-5}`, false},
		{"chatty", `{"events":1.5}`, false},
	}
	for _, tc := range tests {
		var err error
		if tc.tool == "charge" {
			_, err = ParseCharge(json.RawMessage(tc.args))
		} else {
			_, err = ParseChatty(json.RawMessage(tc.args))
		}
		if tc.ok {
			assert.NoError(t, err, tc.args)
		} else {
			assert.ErrorIs(t, err, ErrInvalidArgs, tc.args)
		}
	}
}

func TestSessionLifecycle(t *testing.T) {
	m := sideeffects.NewMemory()
	tools := NewTools(ToolsConfig{Recorder: m})
	tools.SessionClosed("never-opened", "expired")
	tools.SessionOpened("a", "alice", "v")
	tools.SessionOpened("b", "bob", "v")
	tools.NoteClosing("a", "deleted")
	tools.NoteClosing("a", "expired")
	tools.SessionClosed("a", "expired")
	tools.SessionClosed("a", "expired")
	assert.Equal(t, 1, tools.Sessions())
	tools.Shutdown()
	tools.SessionClosed("b", "expired")

	closed := []sideeffects.Record{}
	for _, r := range m.Records() {
		if r.Kind == sideeffects.KindSessionClosed {
			closed = append(closed, r)
		}
	}
	require.Len(t, closed, 2)
	assert.Equal(t, "deleted", closed[0].Reason, "the first noted reason wins")
	assert.Equal(t, "shutdown", closed[1].Reason)
	assert.Zero(t, tools.Sessions())
}

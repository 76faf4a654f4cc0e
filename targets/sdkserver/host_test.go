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
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

func kindSeq(m *sideeffects.Memory) []sideeffects.Kind {
	var out []sideeffects.Kind
	for _, r := range m.Records() {
		out = append(out, r.Kind)
	}
	return out
}

var req = Request{Session: "s1", RequestID: "7"}

func structured(t *testing.T, o tools.Outcome) map[string]any {
	t.Helper()
	raw, err := o.JSON()
	require.NoError(t, err)
	var sc map[string]any
	require.NoError(t, json.Unmarshal(raw, &sc))
	return sc
}

func noEmit(int, int) error { return nil }

// TestCallRecordsTheResultBeforeTheEnd pins the order of an SDK call's
// records: result_written when the result is handed to the SDK, then
// call_finished, so that a settled call has its result in the ledger.
func TestCallRecordsTheResultBeforeTheEnd(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m, Source: "test"})
	host.SessionOpened("s1", "alice", "2025-11-25")
	args := json.RawMessage(`{"order_id":"o-1","amount_cents":5,"idempotency_key":"k","duration_ms":1}`)
	first := host.Call(context.Background(), req, mcp.ToolCharge, args, nil)
	second := host.Call(context.Background(), req, mcp.ToolCharge, args, nil)

	assert.False(t, first.IsError)
	assert.Nil(t, structured(t, first)["deduplicated"])
	assert.Equal(t, true, structured(t, second)["deduplicated"])
	assert.Equal(t, []sideeffects.Kind{
		sideeffects.KindSessionOpened,
		sideeffects.KindCallStarted, sideeffects.KindCharge, sideeffects.KindResultWritten, sideeffects.KindCallFinished,
		sideeffects.KindCallStarted, sideeffects.KindChargeDeduplicated, sideeffects.KindResultWritten, sideeffects.KindCallFinished,
	}, kindSeq(m))
	for _, r := range m.Records()[1:] {
		assert.Equal(t, "s1", r.Session)
		assert.Equal(t, "alice", r.Client, "%s", r.Kind)
		assert.Equal(t, "7", r.RequestID)
		assert.Equal(t, "test", r.Source)
		assert.Equal(t, mcp.ToolCharge, r.Tool, "%s", r.Kind)
		assert.Equal(t, "o-1", r.OrderID, "%s", r.Kind)
		assert.NotEmpty(t, r.ID)
	}
	assert.Equal(t, "ok", m.Records()[4].Reason)
}

func TestCallKeepsRunningWhenTheRequestContextEnds(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m, DefaultChargeDuration: 20 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := host.Call(ctx, req, mcp.ToolCharge, json.RawMessage(`{"order_id":"o-1","amount_cents":5}`), nil)
	assert.False(t, res.IsError)
	assert.Equal(t, 1, m.Count(sideeffects.KindCharge))
	finished := m.Of(sideeffects.KindCallFinished)
	require.Len(t, finished, 1)
	assert.Equal(t, "request context ended during the call: context canceled", finished[0].Detail)
}

func TestShutdownEndsRunningTools(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m, DefaultChargeDuration: time.Hour})
	done := make(chan tools.Outcome)
	go func() {
		done <- host.Call(context.Background(), req, mcp.ToolCharge, json.RawMessage(`{"order_id":"o","amount_cents":1}`), nil)
	}()
	go func() {
		done <- host.Call(context.Background(), req, mcp.ToolChatty, json.RawMessage(`{"events":5,"interval_ms":60000}`),
			host.Emit(req, noEmit))
	}()
	require.Eventually(t, func() bool { return host.Inflight() == 2 }, 5*time.Second, time.Millisecond)
	host.Shutdown()
	host.Shutdown()
	for range 2 {
		out := <-done
		assert.True(t, out.IsError)
		assert.Equal(t, "shutdown", structured(t, out)["error"])
	}
	assert.Zero(t, host.Inflight())
	assert.Zero(t, m.Count(sideeffects.KindCharge))
	assert.Zero(t, m.Count(sideeffects.KindEventEmitted))
	assert.Equal(t, 2, m.Count(sideeffects.KindResultWritten))
	for _, r := range m.Of(sideeffects.KindCallFinished) {
		assert.Equal(t, "shutdown", r.Reason)
		assert.True(t, r.IsError)
	}
}

// TestEmitRecordsBeforeSending checks the SDK side of the emit hook: each
// event is in the ledger before the SDK gets it, and one the SDK refuses
// does not stop the tool.
func TestEmitRecordsBeforeSending(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m})
	var mu sync.Mutex
	var seqs []int
	send := func(seq, total int) error {
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, 3, total)
		last := m.Records()[len(m.Records())-1]
		assert.Equal(t, sideeffects.KindEventEmitted, last.Kind)
		assert.Equal(t, int64(seq), last.Seq, "recorded before it is sent")
		seqs = append(seqs, seq)
		if seq == 2 {
			return errors.New("refused by the SDK")
		}
		return nil
	}
	res := host.Call(context.Background(), req, mcp.ToolChatty, json.RawMessage(`{"events":3}`), host.Emit(req, send))
	assert.False(t, res.IsError)
	assert.EqualValues(t, 3, structured(t, res)["emitted"])
	assert.Equal(t, []int{1, 2, 3}, seqs)
	for _, r := range m.Of(sideeffects.KindEventEmitted) {
		assert.Zero(t, r.EventID, "an SDK shows no event ids")
		assert.Empty(t, r.Stream)
		assert.Equal(t, mcp.ToolChatty, r.Tool)
	}
}

// TestCallWithBadArguments pins that a call the tool refuses is still a
// call: started, answered with invalid_arguments, finished.
func TestCallWithBadArguments(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m})
	res := host.Call(context.Background(), req, mcp.ToolCharge, json.RawMessage(`{"order_id":"o-1"}`), nil)
	assert.True(t, res.IsError)
	assert.Equal(t, "invalid_arguments", structured(t, res)["error"])
	assert.Equal(t, []sideeffects.Kind{
		sideeffects.KindCallStarted, sideeffects.KindResultWritten, sideeffects.KindCallFinished,
	}, kindSeq(m))
	finished := m.Of(sideeffects.KindCallFinished)[0]
	assert.Equal(t, "invalid_arguments", finished.Reason)
	assert.Equal(t, "o-1", finished.OrderID)
}

func TestSessionLifecycle(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m})
	host.SessionClosed("never-opened", "expired")
	host.SessionOpened("a", "alice", "v")
	host.SessionOpened("b", "bob", "v")
	host.NoteClosing("a", "deleted")
	host.NoteClosing("a", "expired")
	host.SessionClosed("a", "expired")
	host.SessionClosed("a", "expired")
	assert.Equal(t, 1, host.Sessions())
	host.Shutdown()
	host.SessionClosed("b", "expired")

	closed := m.Of(sideeffects.KindSessionClosed)
	require.Len(t, closed, 2)
	assert.Equal(t, "deleted", closed[0].Reason, "the first noted reason wins")
	assert.Equal(t, "shutdown", closed[1].Reason)
	assert.Zero(t, host.Sessions())
}

func TestNewHostFor(t *testing.T) {
	for _, bad := range []struct {
		retention int
		ttl       time.Duration
		cfg       Config
	}{{-1, 0, Config{}}, {0, -1, Config{}}, {0, 0, Config{DefaultChargeDuration: -1}}} {
		_, err := NewHostFor("some-sdk", bad.retention, bad.ttl, bad.cfg)
		assert.ErrorContains(t, err, "some-sdk server: ")
	}
	l := sideeffects.NewMemory()
	h, err := NewHostFor("some-sdk", 10, time.Minute, Config{Recorder: l})
	require.NoError(t, err)
	require.NotNil(t, h.Logger())
	h.SessionOpened("s1", "alice", "2025-11-25")
	require.Len(t, l.Records(), 1)
	assert.Equal(t, "some-sdk", l.Records()[0].Source, "the target names the records")
}

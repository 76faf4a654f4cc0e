package server

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// flakyLedger fails every charge while down is set.
type flakyLedger struct {
	*sideeffects.Memory
	down atomic.Bool
}

func (f *flakyLedger) Record(ctx context.Context, r sideeffects.Record) error {
	if f.down.Load() && r.Kind == sideeffects.KindCharge {
		return errors.New("ledger unreachable")
	}
	return f.Memory.Record(ctx, r)
}

func TestChargeFailsWhenTheLedgerDoes(t *testing.T) {
	ledger := &flakyLedger{Memory: sideeffects.NewMemory()}
	ledger.down.Store(true)
	ts := startServer(t, Config{Recorder: ledger})
	ts.ledger = ledger.Memory
	sid, v := ts.initialize(t, mcp.Version20251125)
	args := map[string]any{"order_id": "o-1", "amount_cents": 10, "idempotency_key": "k"}

	res, sc := toolResult(t, resultOf(t, ts.call(t, sid, v, 2, mcp.ToolCharge, args).resp))
	assert.True(t, res.IsError)
	assert.Equal(t, "ledger_failed", sc["error"])
	finished := ts.records(sideeffects.KindCallFinished, forRequest("2"))
	require.Len(t, finished, 1)
	assert.True(t, finished[0].IsError)

	ledger.down.Store(false)
	_, sc = toolResult(t, resultOf(t, ts.call(t, sid, v, 3, mcp.ToolCharge, args).resp))
	assert.Nil(t, sc["deduplicated"], "a key whose charge failed is free again")
	_, sc = toolResult(t, resultOf(t, ts.call(t, sid, v, 4, mcp.ToolCharge, args).resp))
	assert.Equal(t, true, sc["deduplicated"])
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), 1)
	assert.Len(t, ts.records(sideeffects.KindChargeDeduplicated, nil), 1)
}

func TestChargeWithoutKeyIsNotIdempotent(t *testing.T) {
	ts := startServer(t, Config{})
	for i := range 2 {
		sid, v := ts.initialize(t, mcp.Version20251125)
		_, sc := toolResult(t, resultOf(t, ts.call(t, sid, v, 2+i, mcp.ToolCharge, map[string]any{"order_id": "same", "amount_cents": 10}).resp))
		assert.Equal(t, true, sc["charged"])
	}
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), 2, "a retried charge without a key charges again")
}

func TestDefaultChargeDuration(t *testing.T) {
	ts := startServer(t, Config{DefaultChargeDuration: 5000 * 1e6})
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "slow", "amount_cents": 10})
	s.next(t)
	resp := ts.do(t, context.Background(), "GET", "/control/status", nil, "")
	require.Equal(t, 200, resp.StatusCode)
	assert.Equal(t, 1, ts.calls.count(), "without duration_ms the charge runs for the default")
	assert.Empty(t, ts.records(sideeffects.KindCharge, nil))
}

package e2e_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// modernCut runs one charge at 2026-07-28 against a commit_then_notice
// server and cuts every connection once the tool runs: the cut closes the
// call's stream, which cancels it, and the tool charges as it notices.
func modernCut(t *testing.T, target string, call workload.Call) *env {
	e := newEnv(t, server.Config{OnCancel: tools.OnCancelCommitThenNotice})
	opts := e.options(quick)
	opts.Protocol = mcp.Version20260728
	done := e.run(target, opts, call)
	require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCallStarted, nil) == 1 }, runTimeout, time.Millisecond, "the charge never started")
	e.cut()
	require.NoError(t, <-done)
	require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCallCancelled, nil) == 1 }, runTimeout, time.Millisecond,
		"the cut cancelled the call (the server may notice after the client)")
	return e
}

func TestModernNaiveReissuesAndChargesTwice(t *testing.T) {
	e := modernCut(t, client.TargetNaive, charge("order-1", 300*time.Millisecond))
	recs := e.hist.records(t)
	inv := kinds(recs, history.KindInvoke)
	require.Len(t, inv, 2, "the naive client issues the call again: history:\n%s", e.hist.bytes())
	assert.NotEqual(t, inv[0].RequestID, inv[1].RequestID)
	assert.Empty(t, inv[0].Session, "no session at 2026-07-28")
	assert.Empty(t, kinds(recs, history.KindSessionNew))
	require.Len(t, kinds(recs, history.KindOK), 1)
	require.Eventually(t, func() bool {
		return e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")) == 2
	}, runTimeout, time.Millisecond, "the cancelled call committed and the re-issue charged again")
	var cancelledAt, firstCharge int64
	for _, r := range e.ledger.Records() {
		switch {
		case r.Kind == sideeffects.KindCallCancelled:
			cancelledAt = r.N
		case r.Kind == sideeffects.KindCharge && firstCharge == 0:
			firstCharge = r.N
		}
	}
	assert.Greater(t, firstCharge, cancelledAt, "the first charge was committed after the server saw the cancellation")
}

func TestModernResumableMarksUnknownAndNeverReissues(t *testing.T) {
	e := modernCut(t, client.TargetResumable, charge("order-1", 300*time.Millisecond))
	recs := e.hist.records(t)
	require.Len(t, kinds(recs, history.KindInvoke), 1, "history:\n%s", e.hist.bytes())
	unk := kinds(recs, history.KindUnknown)
	require.Len(t, unk, 1)
	assert.Contains(t, unk[0].Reason, "idempotency key")
	require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")) == 1 }, runTimeout, time.Millisecond,
		"charged once (committed as the tool noticed), and the client knows it may have been")
}

func TestModernIdempotencyKeyDeduplicatesTheReissue(t *testing.T) {
	for _, target := range []string{client.TargetNaive, client.TargetResumable} {
		t.Run(target, func(t *testing.T) {
			call := charge("order-1", 300*time.Millisecond)
			call.Args["idempotency_key"] = "key-{order}"
			e := modernCut(t, target, call)
			recs := e.hist.records(t)
			require.Len(t, kinds(recs, history.KindInvoke), 2, "issued again: history:\n%s", e.hist.bytes())
			require.Len(t, kinds(recs, history.KindOK), 1)
			require.Eventually(t, func() bool {
				return e.ledgerCount(sideeffects.KindChargeDeduplicated, forOrder("order-1")) == 1
			}, runTimeout, time.Millisecond)
			assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")), "one charge: the key deduplicated the re-issue")
		})
	}
}

package mcpgo

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	refclient "github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// serveReference serves the reference server writing to l.
func serveReference(t *testing.T, l *sideeffects.Memory, cfg server.Config) string {
	t.Helper()
	cfg.Recorder = l
	s, err := server.New(cfg)
	require.NoError(t, err)
	url := serve(t, s.Handler())
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return url
}

func resumable(ctx context.Context, opts workload.Options, c workload.Client) error {
	return refclient.Run(ctx, refclient.TargetResumable, opts, c)
}

func TestMCPGoClientAgainstReferenceServer(t *testing.T) {
	l := newLedger()
	url := serveReference(t, l, server.Config{})
	recs := runClient(t, RunClient, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

	assert.Equal(t, []history.Kind{
		history.KindClientStart, history.KindSessionNew,
		history.KindInvoke, history.KindEvent, history.KindEvent, history.KindEvent, history.KindOK,
		history.KindInvoke, history.KindOK, history.KindClientStop,
	}, historyKinds(recs))
	assert.Equal(t, []int64{1, 2, 3}, events(recs))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, "reference", l.Of(sideeffects.KindCharge)[0].Source)
}

// TestMCPGoClientAgainstReferenceAfterCut_CurrentBehaviour cuts a charge
// on the reference server. Although the reference server primes the stream
// with an event id and a retry field, mcp-go does not resume a stream that
// broke off: the outcome is unknown and the reference server's tool goes
// on to charge.
func TestMCPGoClientAgainstReferenceAfterCut_CurrentBehaviour(t *testing.T) {
	l := newLedger()
	p := newProxy(t, serveReference(t, l, server.Config{Retry: 20 * time.Millisecond}))
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	go func() {
		await(t, started, "the charge to start")
		p.cut(t)
	}()
	charged := l.Next(kindIs(sideeffects.KindCharge))
	recs := runClient(t, RunClient, p.URL+"/mcp", charge("c1", 200*time.Millisecond))
	await(t, charged, "the charge")

	assert.Equal(t, []history.Kind{
		history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindStreamBreak,
		history.KindUnknown, history.KindClientStop,
	}, historyKinds(recs))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
}

func TestResumableClientAgainstMCPGoServer(t *testing.T) {
	l := newLedger()
	url := serveSDK(t, Target, l)
	recs := runClient(t, resumable, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

	assert.Equal(t, []history.Kind{history.KindInvoke, history.KindOK, history.KindInvoke, history.KindOK},
		onlyKinds(recs, history.KindInvoke, history.KindOK, history.KindUnknown, history.KindFail))
	assert.Equal(t, []int64{1, 2, 3}, slices.DeleteFunc(events(recs), func(seq int64) bool { return seq == 0 }))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, Target, l.Of(sideeffects.KindCharge)[0].Source)
}

// TestResumableClientAgainstMCPGoServerAfterCut cuts a charge on mcp-go,
// which answers a call without notifications with one JSON body at the
// end: there is no event id to resume from, so even the resumable client
// can only call the outcome unknown, while the tool charges and its result
// goes nowhere.
func TestResumableClientAgainstMCPGoServerAfterCut(t *testing.T) {
	l := newLedger()
	p := newProxy(t, serveSDK(t, Target, l))
	started := l.Next(kindIs(sideeffects.KindCallStarted))
	go func() {
		await(t, started, "the charge to start")
		p.cut(t)
	}()
	written := l.Next(kindIs(sideeffects.KindResultWritten))
	recs := runClient(t, resumable, p.URL+"/mcp", charge("c1", 200*time.Millisecond))
	await(t, written, "the charge's result")

	assert.Equal(t, []history.Kind{history.KindInvoke, history.KindUnknown},
		onlyKinds(recs, history.KindInvoke, history.KindOK, history.KindUnknown, history.KindFail))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
}

func onlyKinds(recs []history.Record, ks ...history.Kind) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		if slices.Contains(ks, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}

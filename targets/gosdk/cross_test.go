package gosdk

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

func TestGoSDKClientAgainstReferenceServer(t *testing.T) {
	l := newLedger()
	url := serveReference(t, l, server.Config{})
	recs := runClient(t, RunClient, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

	assert.Equal(t, []history.Kind{
		history.KindClientStart, history.KindSessionNew,
		history.KindInvoke, history.KindEvent, history.KindEvent, history.KindEvent, history.KindOK,
		history.KindInvoke, history.KindOK, history.KindClientStop,
	}, historyKinds(recs))
	assert.Equal(t, []int64{1, 2, 3}, events(recs))
	for _, r := range only(recs, history.KindEvent) {
		assert.Positive(t, r.EventID)
	}
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, "reference", l.Of(sideeffects.KindCharge)[0].Source)
}

// TestGoSDKClientAgainstReferenceAfterCut_CurrentBehaviour cuts a chatty
// call on the reference server, whose priming event carries a retry field:
// the go-sdk client honours it for its reconnect (instead of its own
// 1–2 s), resumes with Last-Event-ID and receives every event and the
// result. (The cut waits for the second progress event, so the SDK has
// read event ids from the stream before it breaks.)
func TestGoSDKClientAgainstReferenceAfterCut_CurrentBehaviour(t *testing.T) {
	l := newLedger()
	p := newProxy(t, serveReference(t, l, server.Config{Retry: 20 * time.Millisecond}))
	w := newWatch()
	second := w.on(func(r history.Record) bool { return r.Kind == history.KindEvent && r.Seq == 2 })
	go func() {
		await(t, second, "the second event")
		p.cut(t)
	}()
	recs := runWatched(t, RunClient, p.URL+"/mcp", w, chatty("c1", 6, 300*time.Millisecond))

	assert.Equal(t, []history.Kind{
		history.KindClientStart, history.KindSessionNew, history.KindInvoke, history.KindStreamBreak,
		history.KindReconnect, history.KindResume, history.KindOK, history.KindClientStop,
	}, withoutEvents(recs))
	rc := only(recs, history.KindReconnect)[0]
	assert.Less(t, rc.DelayUS, time.Second.Microseconds(), "the server's retry field, not the SDK's own delay")
	assert.Equal(t, "ok", rc.Result)
	assert.Equal(t, []int64{1, 2, 3, 4, 5, 6}, events(recs), "every event once, in order")
}

func TestResumableClientAgainstGoSDKServer(t *testing.T) {
	l := newLedger()
	url := serveSDK(t, newSDKServer(t, Target, l))
	recs := runClient(t, resumable, url+"/mcp", chatty("c1", 3, 3*time.Millisecond), charge("c2", 5*time.Millisecond))

	assert.Equal(t, []history.Kind{
		history.KindInvoke, history.KindOK, history.KindInvoke, history.KindOK,
	}, onlyKinds(recs, history.KindInvoke, history.KindOK))
	// The resumable client records every event it reads; progress ones
	// carry their sequence number.
	assert.Equal(t, []int64{1, 2, 3}, slices.DeleteFunc(events(recs), func(seq int64) bool { return seq == 0 }))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
	assert.Equal(t, Target, l.Of(sideeffects.KindCharge)[0].Source)
}

// TestResumableClientAgainstGoSDKServerAfterCut cuts a charge once the
// go-sdk server's priming event has arrived: the resumable client resumes
// from it and gets the original result, with one charge.
func TestResumableClientAgainstGoSDKServerAfterCut(t *testing.T) {
	l := newLedger()
	p := newProxy(t, serveSDK(t, newSDKServer(t, Target, l)))
	w := newWatch()
	go func() {
		await(t, w.answering(), "the charge's stream to open")
		p.cut(t)
	}()
	recs := runWatched(t, resumable, p.URL+"/mcp", w, charge("c1", 300*time.Millisecond))

	assert.Equal(t, []history.Kind{history.KindInvoke, history.KindStreamBreak, history.KindResume, history.KindOK},
		onlyKinds(recs, history.KindInvoke, history.KindStreamBreak, history.KindResume, history.KindOK,
			history.KindUnknown, history.KindFail))
	assert.Equal(t, 1, l.Count(sideeffects.KindCharge))
}

// onlyKinds lists the kinds of the records whose kind is one of ks.
func onlyKinds(recs []history.Record, ks ...history.Kind) []history.Kind {
	var out []history.Kind
	for _, r := range recs {
		if slices.Contains(ks, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}

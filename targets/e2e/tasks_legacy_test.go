package e2e_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

func legacyTaskOptions(e *env, cursorDir string) workload.Options {
	opts := e.options(quick)
	opts.Protocol, opts.Tasks = mcpwire.Version20251125, client.TasksLegacy
	opts.Cursor, opts.CursorDir = client.CursorFile, cursorDir
	return opts
}

// TestLegacyTaskSurvivesCutsWhilePolling: at 2025-11-25 with tasks the
// call is a task; cuts break polls, never the call: charged once, its
// result fetched once, ok once.
func TestLegacyTaskSurvivesCutsWhilePolling(t *testing.T) {
	e := newEnv(t, server.Config{Tasks: server.TasksLegacy, TaskPollInterval: 20 * time.Millisecond})
	done := e.run(client.TargetResumable, legacyTaskOptions(e, t.TempDir()), charge("order-1", 300*time.Millisecond))
	e.hist.await(t, "task handle", func(r history.Record) bool { return r.Kind == history.KindTask })
	for range 5 {
		e.cut()
		time.Sleep(30 * time.Millisecond)
	}
	require.NoError(t, <-done)
	recs := e.hist.records(t)
	require.Len(t, kinds(recs, history.KindInvoke), 1, "history:\n%s", e.hist.bytes())
	require.Len(t, kinds(recs, history.KindOK), 1, "history:\n%s", e.hist.bytes())
	assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, forOrder("order-1")))
	assert.Equal(t, 1, e.ledgerCount(sideeffects.KindResultWritten, nil), "the result was fetched once")
}

// TestLegacyTaskStoreAcrossServerCrash: the server crashes after the task
// completed; its memory event store takes the session along (404), so the
// client opens a new session and polls on. The file task store still has
// the result; the memory one lost the task, which the client surfaces as
// an unknown outcome without calling again.
func TestLegacyTaskStoreAcrossServerCrash(t *testing.T) {
	for _, st := range []string{server.EventStoreFile, server.EventStoreMemory} {
		t.Run(st, func(t *testing.T) {
			e := newEnv(t, server.Config{Tasks: server.TasksLegacy, TaskStore: st,
				TaskStorePath: filepath.Join(t.TempDir(), "tasks.log"), TaskPollInterval: 400 * time.Millisecond})
			done := e.run(client.TargetResumable, legacyTaskOptions(e, t.TempDir()), charge("order-1", 50*time.Millisecond))
			require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCharge, nil) == 1 }, runTimeout, time.Millisecond)
			addr := e.addr
			e.stopServer(true)
			e.startServer(addr)
			require.NoError(t, <-done)
			recs := e.hist.records(t)
			require.Len(t, kinds(recs, history.KindInvoke), 1, "history:\n%s", e.hist.bytes())
			assert.Len(t, kinds(recs, history.KindSessionNew), 2, "a new session after the 404")
			assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, nil))
			if st == server.EventStoreFile {
				require.Len(t, kinds(recs, history.KindOK), 1, "the result survived the crash")
				assert.Equal(t, 1, e.ledgerCount(sideeffects.KindResultWritten, nil))
				return
			}
			unk := kinds(recs, history.KindUnknown)
			require.Len(t, unk, 1)
			assert.Contains(t, unk[0].Reason, "lost")
		})
	}
}

// TestLegacyTaskClientRestart: the client dies while polling; restarted on
// its file cursor it polls the same task and fetches the result once,
// without invoking again, and makes its next call a task too on the
// session it adopted.
func TestLegacyTaskClientRestart(t *testing.T) {
	e := newEnv(t, server.Config{Tasks: server.TasksLegacy, TaskPollInterval: 20 * time.Millisecond})
	opts := legacyTaskOptions(e, t.TempDir())
	calls := []workload.Call{charge("order-1", 200*time.Millisecond), charge("order-2", 10*time.Millisecond)}
	ctx, kill := context.WithCancel(context.Background())
	killed := make(chan error, 1)
	go func() {
		killed <- client.Run(ctx, client.TargetResumable, opts, workload.Client{ID: "c1", Calls: calls})
	}()
	e.hist.await(t, "task handle", func(r history.Record) bool { return r.Kind == history.KindTask })
	kill()
	require.ErrorIs(t, <-killed, context.Canceled)
	require.NoError(t, <-e.run(client.TargetResumable, opts, calls...))
	recs := e.hist.records(t)
	require.Len(t, kinds(recs, history.KindInvoke), 2, "history:\n%s", e.hist.bytes())
	require.Len(t, kinds(recs, history.KindOK), 2, "history:\n%s", e.hist.bytes())
	tasks := map[string]bool{}
	for _, r := range kinds(recs, history.KindTask) {
		tasks[r.Call+" "+r.Detail] = true
	}
	assert.Len(t, tasks, 2, "the restarted client polls the same task, and its second call is a task on the adopted session")
	assert.Len(t, kinds(recs, history.KindSessionNew), 1)
	assert.Equal(t, 2, e.ledgerCount(sideeffects.KindCharge, nil))
	assert.Equal(t, 2, e.ledgerCount(sideeffects.KindResultWritten, nil))
}

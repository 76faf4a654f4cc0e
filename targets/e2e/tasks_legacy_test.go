package e2e_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// TestLegacyTaskClientRestart: the client dies while polling; restarted on
// its file cursor it polls the same task and fetches the result once,
// without invoking again, and makes its next call a task too on the
// session it adopted.
func TestLegacyTaskClientRestart(t *testing.T) {
	e := newEnv(t, server.Config{Tasks: server.TasksLegacy, TaskPollInterval: 20 * time.Millisecond})
	opts := legacyTasks.options(e, t.TempDir())
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

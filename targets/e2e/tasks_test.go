package e2e_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// taskShape is one of the two shapes of tasks: the 2026-07-28 extension
// (stateless) and the experimental tasks of 2025-11-25 (on a session).
type taskShape struct {
	name     string
	protocol string
	tasks    string // client.tasks and server.tasks
	sessions bool   // the calls run on a session, which a crash takes along
}

var (
	extensionTasks = taskShape{"extension", mcp.Version20260728, server.TasksExtension, false}
	legacyTasks    = taskShape{"legacy", mcp.Version20251125, server.TasksLegacy, true}
	taskShapes     = []taskShape{extensionTasks, legacyTasks}
)

func (sh taskShape) options(e *env, cursorDir string) workload.Options {
	opts := e.options(quick)
	opts.Protocol, opts.Tasks = sh.protocol, sh.tasks
	opts.Cursor, opts.CursorDir = client.CursorFile, cursorDir
	return opts
}

// TestTaskSurvivesCutsWhilePolling: the call is a task; cuts between and
// during polls break polls, never the call: charged once, its result
// fetched once, ok once.
func TestTaskSurvivesCutsWhilePolling(t *testing.T) {
	for _, sh := range taskShapes {
		t.Run(sh.name, func(t *testing.T) {
			e := newEnv(t, server.Config{Tasks: sh.tasks, TaskPollInterval: 20 * time.Millisecond})
			done := e.run(client.TargetResumable, sh.options(e, t.TempDir()), charge("order-1", 300*time.Millisecond))
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
		})
	}
}

// TestTaskStoreAcrossServerCrash: the task completes, the server crashes
// before the client's next poll. On a session (2025-11-25) the memory
// event store takes the session along (404), so the client opens a new
// session and polls on. The file task store still has the result; the
// memory one lost the task, and the client surfaces the loss as an
// unknown outcome without calling again.
func TestTaskStoreAcrossServerCrash(t *testing.T) {
	for _, sh := range taskShapes {
		for _, st := range []string{server.EventStoreFile, server.EventStoreMemory} {
			t.Run(sh.name+"/"+st, func(t *testing.T) {
				e := newEnv(t, server.Config{Tasks: sh.tasks, TaskStore: st,
					TaskStorePath: filepath.Join(t.TempDir(), "tasks.log"), TaskPollInterval: 400 * time.Millisecond})
				done := e.run(client.TargetResumable, sh.options(e, t.TempDir()), charge("order-1", 50*time.Millisecond))
				require.Eventually(t, func() bool { return e.ledgerCount(sideeffects.KindCharge, nil) == 1 }, runTimeout, time.Millisecond)
				addr := e.addr
				e.stopServer(true)
				e.startServer(addr)
				require.NoError(t, <-done)
				recs := e.hist.records(t)
				require.Len(t, kinds(recs, history.KindInvoke), 1, "history:\n%s", e.hist.bytes())
				assert.Equal(t, 1, e.ledgerCount(sideeffects.KindCharge, nil))
				if sh.sessions {
					assert.Len(t, kinds(recs, history.KindSessionNew), 2, "a new session after the 404")
				}
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
}

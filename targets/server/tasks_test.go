package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// taskMeta is the _meta of a 2026-07-28 client declaring the tasks
// extension.
func taskMeta() map[string]any {
	m := modernMeta("tasker")
	m[mcp.MetaClientCapabilities] = map[string]any{"extensions": map[string]any{mcp.ExtensionTasks: map[string]any{}}}
	return m
}

func (ts *tserver) modernDo(t *testing.T, req request) mcp.Message {
	t.Helper()
	return resultOf(t, ts.do(t, context.Background(), req.method, "", req.h, req.body))
}

func taskCall(t *testing.T, id int, args map[string]any) request {
	return modern(t, id, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolCharge, "arguments": args, "_meta": taskMeta()})
}

func taskReq(t *testing.T, id int, method, taskID string, meta map[string]any) request {
	r := modern(t, id, method, map[string]any{"taskId": taskID, "_meta": meta})
	return r.with(mcp.HeaderName, taskID)
}

func decodeTask(t *testing.T, m mcp.Message) taskWire {
	t.Helper()
	require.Nil(t, m.Error, "%+v", m.Error)
	var tw taskWire
	require.NoError(t, json.Unmarshal(m.Result, &tw))
	return tw
}

func (ts *tserver) pollTask(t *testing.T, id string) taskWire {
	t.Helper()
	var tw taskWire
	require.Eventually(t, func() bool {
		tw = decodeTask(t, ts.modernDo(t, taskReq(t, 9, mcp.MethodTasksGet, id, taskMeta())))
		return tw.Status != taskWorking
	}, testTimeout, 5*time.Millisecond)
	return tw
}

func TestTaskCreatedPolledCompleted(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension, TaskPollInterval: 250 * time.Millisecond, TaskTTL: time.Minute})
	d := decodeDiscover(t, ts.modernDo(t, modern(t, 1, mcp.MethodDiscover, nil)))
	assert.JSONEq(t, `{"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`, string(d.Capabilities))

	created := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "t", "amount_cents": 5, "duration_ms": 50})))
	assert.Equal(t, mcp.ResultTask, created.ResultType)
	assert.Equal(t, taskWorking, created.Status)
	assert.Equal(t, int64(250), created.PollIntervalMs)
	require.NotNil(t, created.TTLMs)
	assert.Equal(t, int64(60000), *created.TTLMs)

	done := ts.pollTask(t, created.TaskID)
	assert.Equal(t, mcp.ResultComplete, done.ResultType)
	assert.Equal(t, taskCompleted, done.Status)
	var res mcp.CallResult
	require.NoError(t, json.Unmarshal(done.Result, &res))
	assert.JSONEq(t, `{"charged":true,"order_id":"t","amount_cents":5}`, string(res.StructuredContent))
	charges := ts.records(sideeffects.KindCharge, nil)
	require.Len(t, charges, 1)
	assert.Equal(t, "task:"+created.TaskID, charges[0].Stream)
	assert.Len(t, ts.records(sideeffects.KindResultWritten, nil), 1, "each fetch of the result is recorded")

	ts.modernDo(t, taskReq(t, 10, mcp.MethodTasksGet, created.TaskID, taskMeta()))
	assert.Len(t, ts.records(sideeffects.KindResultWritten, nil), 2)
}

func decodeDiscover(t *testing.T, m mcp.Message) mcp.DiscoverResult {
	t.Helper()
	var d mcp.DiscoverResult
	require.NoError(t, json.Unmarshal(m.Result, &d))
	return d
}

func TestTaskErrors(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension, TaskTTL: 30 * time.Millisecond})
	created := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "t", "amount_cents": 5, "duration_ms": 1})))

	noCap := ts.modernDo(t, taskReq(t, 3, mcp.MethodTasksGet, created.TaskID, modernMeta("plain")))
	require.NotNil(t, noCap.Error)
	assert.Equal(t, mcp.CodeMissingClientCapability, noCap.Error.Code)

	unknown := ts.modernDo(t, taskReq(t, 4, mcp.MethodTasksGet, "nope", taskMeta()))
	require.NotNil(t, unknown.Error)
	assert.Equal(t, mcp.CodeInvalidParams, unknown.Error.Code)
	assert.Equal(t, "Failed to retrieve task: task not found", unknown.Error.Message)

	wrongName := taskReq(t, 5, mcp.MethodTasksGet, created.TaskID, taskMeta()).with(mcp.HeaderName, "other")
	resp := ts.do(t, context.Background(), wrongName.method, "", wrongName.h, wrongName.body)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "Mcp-Name must be the task id")

	time.Sleep(50 * time.Millisecond)
	expired := ts.modernDo(t, taskReq(t, 6, mcp.MethodTasksGet, created.TaskID, taskMeta()))
	require.NotNil(t, expired.Error)
	assert.Equal(t, "Failed to retrieve task: task has expired", expired.Error.Message)

	plain := ts.modernDo(t, modernCharge(t, 7, map[string]any{"order_id": "p", "amount_cents": 1, "duration_ms": 1}))
	assert.NotContains(t, string(plain.Result), `"resultType":"task"`, "no task for a client that did not declare the extension")

	off := startServer(t, Config{})
	resp = off.do(t, context.Background(), http.MethodPost, "", taskReq(t, 8, mcp.MethodTasksGet, "x", taskMeta()).h, taskReq(t, 8, mcp.MethodTasksGet, "x", taskMeta()).body)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "tasks off: tasks/get is not a method")
}

func TestTaskCancel(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension, OnCancel: tools.OnCancelStop})
	created := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "c", "amount_cents": 5, "duration_ms": 5000})))
	ack := ts.modernDo(t, taskReq(t, 3, mcp.MethodTasksCancel, created.TaskID, taskMeta()))
	require.Nil(t, ack.Error)
	assert.Equal(t, taskCancelled, ts.pollTask(t, created.TaskID).Status)
	assert.Empty(t, ts.records(sideeffects.KindCharge, nil))
	assert.Len(t, ts.records(sideeffects.KindCallCancelled, nil), 1)
}

// TestTaskFileStoreAcrossCrash: a completed task's result survives a
// crash with the file store, and a task left working fails as interrupted;
// the memory store forgets both.
func TestTaskFileStoreAcrossCrash(t *testing.T) {
	for _, st := range []string{EventStoreFile, EventStoreMemory} {
		t.Run(st, func(t *testing.T) {
			cfg := Config{Tasks: TasksExtension, TaskStore: st, TaskStorePath: filepath.Join(t.TempDir(), "tasks.log")}
			ts := startServer(t, cfg)
			done := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "d", "amount_cents": 5, "duration_ms": 1})))
			ts.pollTask(t, done.TaskID)
			running := decodeTask(t, ts.modernDo(t, taskCall(t, 3, map[string]any{"order_id": "r", "amount_cents": 5, "duration_ms": 10000})))
			require.NoError(t, ts.Close())

			ts2 := startServer(t, cfg)
			got := ts2.modernDo(t, taskReq(t, 4, mcp.MethodTasksGet, done.TaskID, taskMeta()))
			left := ts2.modernDo(t, taskReq(t, 5, mcp.MethodTasksGet, running.TaskID, taskMeta()))
			if st == EventStoreMemory {
				require.NotNil(t, got.Error, "the memory store lost the task")
				require.NotNil(t, left.Error)
				return
			}
			assert.Equal(t, taskCompleted, decodeTask(t, got).Status, "the result survived")
			failed := decodeTask(t, left)
			assert.Equal(t, taskFailed, failed.Status)
			require.NotNil(t, failed.Error)
			assert.Equal(t, "interrupted_by_restart", failed.Error.Message)
		})
	}
}

func TestControlDropTasks(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension})
	created := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "d", "amount_cents": 5, "duration_ms": 100})))
	resp := ts.do(t, context.Background(), http.MethodPost, "/control/drop_tasks", nil, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var body tasksBody
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	assert.Equal(t, []string{created.TaskID}, body.Tasks)
	lost := ts.modernDo(t, taskReq(t, 3, mcp.MethodTasksGet, created.TaskID, taskMeta()))
	require.NotNil(t, lost.Error)
	assert.Equal(t, "Failed to retrieve task: task not found", lost.Error.Message)
	ts.waitRecord(t, sideeffects.KindCharge, nil) // the tool ran on: its result goes nowhere

	off := startServer(t, Config{})
	assert.Equal(t, http.StatusNotFound, off.do(t, context.Background(), http.MethodPost, "/control/drop_tasks", nil, "").StatusCode)
}

// TestTaskUpdate: tasks/update (the extension) of a known task is
// acknowledged with resultType complete, its inputResponses ignored (no
// tool here asks for input, so no key is outstanding); of an unknown task
// it is -32602; from a client that did not declare the extension, -32021.
func TestTaskUpdate(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension})
	created := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "u", "amount_cents": 5, "duration_ms": 200})))
	update := func(id int, taskID string, meta map[string]any) mcp.Message {
		r := modern(t, id, mcp.MethodTasksUpdate, map[string]any{"taskId": taskID, "_meta": meta,
			"inputResponses": map[string]any{"name": map[string]any{"action": "accept", "content": map[string]any{"input": "x"}}}})
		return ts.modernDo(t, r.with(mcp.HeaderName, taskID))
	}
	ack := update(3, created.TaskID, taskMeta())
	require.Nil(t, ack.Error)
	assert.JSONEq(t, `{"resultType":"complete"}`, string(ack.Result))
	assert.Equal(t, taskCompleted, ts.pollTask(t, created.TaskID).Status, "the ignored responses change nothing")

	unknown := update(4, "nope", taskMeta())
	require.NotNil(t, unknown.Error)
	assert.Equal(t, mcp.CodeInvalidParams, unknown.Error.Code)
	noCap := update(5, created.TaskID, modernMeta("plain"))
	require.NotNil(t, noCap.Error)
	assert.Equal(t, mcp.CodeMissingClientCapability, noCap.Error.Code)
}

// TestTaskTTLDeletesWhateverTheStatus pins what the reference server does
// when a task's ttlMs runs out, which the extension leaves to the server
// ("MAY mark a task as failed at any point after the TTL elapses, and
// subsequently delete it at any time"; answering a purged task as not
// found is compliant): it deletes the task, working or not, and answers
// -32602 "task has expired"; it never turns it failed. The tool of a
// working task runs on, its result kept by nobody. A tool result with
// isError completes its task (failed is for JSON-RPC errors only).
func TestTaskTTLDeletesWhateverTheStatus(t *testing.T) {
	ts := startServer(t, Config{Tasks: TasksExtension, TaskTTL: 40 * time.Millisecond})
	working := decodeTask(t, ts.modernDo(t, taskCall(t, 2, map[string]any{"order_id": "w", "amount_cents": 5, "duration_ms": 300})))
	var last mcp.Message
	require.Eventually(t, func() bool {
		last = ts.modernDo(t, taskReq(t, 3, mcp.MethodTasksGet, working.TaskID, taskMeta()))
		if last.Error == nil {
			assert.Equal(t, taskWorking, decodeTask(t, last).Status, "never failed by its ttl")
		}
		return last.Error != nil
	}, testTimeout, 5*time.Millisecond)
	assert.Equal(t, mcp.CodeInvalidParams, last.Error.Code)
	assert.Equal(t, "Failed to retrieve task: task has expired", last.Error.Message)
	ts.waitRecord(t, sideeffects.KindCharge, nil)
	assert.Empty(t, ts.records(sideeffects.KindResultWritten, nil), "nobody fetched the result")

	long := startServer(t, Config{Tasks: TasksExtension})
	bad := decodeTask(t, long.modernDo(t, taskCall(t, 4, map[string]any{"order_id": "b"})))
	done := long.pollTask(t, bad.TaskID)
	assert.Equal(t, taskCompleted, done.Status, "an isError result completes the task")
	var res mcp.CallResult
	require.NoError(t, json.Unmarshal(done.Result, &res))
	assert.True(t, res.IsError)
}

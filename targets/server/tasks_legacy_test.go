package server

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// legacySession is a 2025-11-25 session on a server with legacy tasks.
type legacySession struct {
	ts      *tserver
	sid     string
	version string
}

func startLegacy(t *testing.T, cfg Config) legacySession {
	t.Helper()
	cfg.Tasks = TasksLegacy
	ts := startServer(t, cfg)
	sid, v := ts.initialize(t, mcp.Version20251125)
	return legacySession{ts: ts, sid: sid, version: v}
}

// rpc sends one request on the session and returns its response.
func (ls legacySession) rpc(t *testing.T, id int, method string, params any) mcp.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	resp := ls.ts.do(t, ctx, http.MethodPost, "", headers(ls.sid, ls.version), requestBody(t, id, method, params))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return resultOf(t, resp)
}

func (ls legacySession) taskCall(t *testing.T, id int, args map[string]any, ttl *int64) mcp.Task {
	t.Helper()
	m := ls.rpc(t, id, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolCharge, "arguments": args, "task": mcp.TaskParams{TTL: ttl}})
	require.Nil(t, m.Error, "%+v", m.Error)
	var cr mcp.CreateTaskResult
	require.NoError(t, json.Unmarshal(m.Result, &cr))
	require.NotEmpty(t, cr.Task.TaskID)
	return cr.Task
}

func (ls legacySession) get(t *testing.T, id int, taskID string) mcp.Message {
	t.Helper()
	return ls.rpc(t, id, mcp.MethodTasksGet, map[string]any{"taskId": taskID})
}

func decodeLegacyTask(t *testing.T, m mcp.Message) mcp.Task {
	t.Helper()
	require.Nil(t, m.Error, "%+v", m.Error)
	var tk mcp.Task
	require.NoError(t, json.Unmarshal(m.Result, &tk))
	return tk
}

func (ls legacySession) pollTerminal(t *testing.T, taskID string) mcp.Task {
	t.Helper()
	var tk mcp.Task
	require.Eventually(t, func() bool {
		tk = decodeLegacyTask(t, ls.get(t, 90, taskID))
		return mcp.TaskTerminal(tk.Status)
	}, testTimeout, 5*time.Millisecond)
	return tk
}

func TestLegacyTaskCapabilityOnlyAt20251125(t *testing.T) {
	for _, tc := range []struct {
		version string
		caps    string
		support bool
	}{
		{mcp.Version20251125, `{"tools":{},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`, true},
		{mcp.Version20250618, `{"tools":{}}`, false},
	} {
		t.Run(tc.version, func(t *testing.T) {
			ts := startServer(t, Config{Tasks: TasksLegacy})
			resp := ts.do(t, context.Background(), http.MethodPost, "", headers("", ""), initBody(t, tc.version, "c"))
			var ir mcp.InitializeResult
			require.NoError(t, json.Unmarshal(resultOf(t, resp).Result, &ir))
			assert.JSONEq(t, tc.caps, string(ir.Capabilities))
			sid := resp.Header.Get(mcp.HeaderSessionID)
			ls := legacySession{ts: ts, sid: sid, version: tc.version}
			list := ls.rpc(t, 2, mcp.MethodToolsList, nil)
			assert.Equal(t, tc.support, strings.Contains(string(list.Result), `"taskSupport":"optional"`))
			if !tc.support {
				// Without the capability a task-augmented call is an
				// ordinary one: the task metadata is ignored.
				m := ls.rpc(t, 3, mcp.MethodToolsCall, map[string]any{"name": mcp.ToolCharge,
					"arguments": map[string]any{"order_id": "o", "amount_cents": 1, "duration_ms": 1}, "task": map[string]any{}})
				res, _ := toolResult(t, m)
				assert.False(t, res.IsError)
				get := ls.rpc(t, 4, mcp.MethodTasksGet, map[string]any{"taskId": "x"})
				require.NotNil(t, get.Error)
				assert.Equal(t, mcp.CodeMethodNotFound, get.Error.Code)
			}
		})
	}
}

func TestLegacyTaskCreatedPolledFetched(t *testing.T) {
	ls := startLegacy(t, Config{TaskPollInterval: 250 * time.Millisecond, TaskTTL: time.Minute})
	ttl := int64(30000)
	created := ls.taskCall(t, 2, map[string]any{"order_id": "t", "amount_cents": 5, "duration_ms": 300}, &ttl)
	assert.Equal(t, mcp.TaskWorking, created.Status)
	assert.Equal(t, int64(250), created.PollInterval)
	require.NotNil(t, created.TTL)
	assert.Equal(t, int64(30000), *created.TTL, "a ttl under the server's is honoured")
	assert.Empty(t, ls.ts.records(sideeffects.KindResultWritten, nil), "a CreateTaskResult is no tool result")

	// tasks/result while the task works blocks until it is terminal.
	res := ls.rpc(t, 3, mcp.MethodTasksResult, map[string]any{"taskId": created.TaskID})
	require.Nil(t, res.Error)
	var body struct {
		mcp.CallResult
		Meta map[string]mcp.RelatedTask `json:"_meta"`
	}
	require.NoError(t, json.Unmarshal(res.Result, &body))
	assert.JSONEq(t, `{"charged":true,"order_id":"t","amount_cents":5}`, string(body.StructuredContent))
	assert.Equal(t, created.TaskID, body.Meta[mcp.MetaRelatedTask].TaskID)

	done := decodeLegacyTask(t, ls.get(t, 4, created.TaskID))
	assert.Equal(t, mcp.TaskCompleted, done.Status)
	assert.NotContains(t, string(ls.get(t, 5, created.TaskID).Result), "structuredContent", "tasks/get carries no result")

	written := ls.ts.records(sideeffects.KindResultWritten, nil)
	require.Len(t, written, 1, "each hand-out of the result is recorded")
	assert.Equal(t, "task:"+created.TaskID, written[0].Stream)
	assert.Equal(t, "2", written[0].RequestID, "the result is the tools/call's")
	assert.Equal(t, ls.sid, written[0].Session)
	charges := ls.ts.records(sideeffects.KindCharge, nil)
	require.Len(t, charges, 1)
	assert.Equal(t, "task:"+created.TaskID, charges[0].Stream)

	big := int64(10 * time.Hour / time.Millisecond)
	capped := ls.taskCall(t, 6, map[string]any{"order_id": "c", "amount_cents": 5, "duration_ms": 1}, &big)
	assert.Equal(t, int64(60000), *capped.TTL, "no ttl over the server's")
}

func TestLegacyTaskErrorResultFails(t *testing.T) {
	ls := startLegacy(t, Config{})
	created := ls.taskCall(t, 2, map[string]any{"order_id": "bad"}, nil)
	failed := ls.pollTerminal(t, created.TaskID)
	assert.Equal(t, mcp.TaskFailed, failed.Status, "a tool result with isError fails the task")
	assert.NotEmpty(t, failed.StatusMessage)
	res, _ := toolResult(t, ls.rpc(t, 3, mcp.MethodTasksResult, map[string]any{"taskId": created.TaskID}))
	assert.True(t, res.IsError, "tasks/result returns the tool's own result")
}

func TestLegacyTaskErrors(t *testing.T) {
	ls := startLegacy(t, Config{TaskTTL: time.Minute})
	for _, tc := range []struct {
		method, msg string
		params      map[string]any
	}{
		{mcp.MethodTasksGet, "Failed to retrieve task: task not found", map[string]any{"taskId": "nope"}},
		{mcp.MethodTasksResult, "Failed to retrieve task: task not found", map[string]any{"taskId": "nope"}},
		{mcp.MethodTasksCancel, "Cannot cancel task: task not found", map[string]any{"taskId": "nope"}},
		{mcp.MethodTasksGet, "tasks/get needs params.taskId", map[string]any{}},
		{mcp.MethodTasksList, "Failed to list tasks: invalid cursor", map[string]any{"cursor": "bm9wZQ"}},
	} {
		m := ls.rpc(t, 2, tc.method, tc.params)
		require.NotNil(t, m.Error, tc.method)
		assert.Equal(t, mcp.CodeInvalidParams, m.Error.Code, tc.method)
		assert.Equal(t, tc.msg, m.Error.Message, tc.method)
	}
}

func TestLegacyTaskTTLExpires(t *testing.T) {
	ls := startLegacy(t, Config{})
	ttl := int64(20)
	created := ls.taskCall(t, 2, map[string]any{"order_id": "e", "amount_cents": 5, "duration_ms": 1}, &ttl)
	require.Eventually(t, func() bool {
		m := ls.get(t, 3, created.TaskID)
		return m.Error != nil && m.Error.Message == "Failed to retrieve task: task has expired"
	}, testTimeout, 5*time.Millisecond, "a task past its ttl is deleted, whatever its status")
	m := ls.rpc(t, 4, mcp.MethodTasksResult, map[string]any{"taskId": created.TaskID})
	require.NotNil(t, m.Error)
	assert.Equal(t, mcp.CodeInvalidParams, m.Error.Code)
}

func TestLegacyTaskCancel(t *testing.T) {
	ls := startLegacy(t, Config{OnCancel: tools.OnCancelStop})
	created := ls.taskCall(t, 2, map[string]any{"order_id": "c", "amount_cents": 5, "duration_ms": 5000}, nil)
	ack := decodeLegacyTask(t, ls.rpc(t, 3, mcp.MethodTasksCancel, map[string]any{"taskId": created.TaskID}))
	assert.Equal(t, mcp.TaskCancelled, ack.Status, "cancelled before the answer")
	assert.Equal(t, mcp.TaskCancelled, decodeLegacyTask(t, ls.get(t, 4, created.TaskID)).Status)
	again := ls.rpc(t, 5, mcp.MethodTasksCancel, map[string]any{"taskId": created.TaskID})
	require.NotNil(t, again.Error)
	assert.Equal(t, mcp.CodeInvalidParams, again.Error.Code)
	assert.Equal(t, "Cannot cancel task: task is already in a terminal status 'cancelled'", again.Error.Message)
	ls.ts.waitRecord(t, sideeffects.KindCallCancelled, nil)
	assert.Empty(t, ls.ts.records(sideeffects.KindCharge, nil))
	res := ls.rpc(t, 6, mcp.MethodTasksResult, map[string]any{"taskId": created.TaskID})
	require.NotNil(t, res.Error, "a cancelled task has no result")

	// A tool that commits after the cancel leaves its task cancelled.
	commit := startLegacy(t, Config{OnCancel: tools.OnCancelCommitThenNotice})
	c2 := commit.taskCall(t, 2, map[string]any{"order_id": "k", "amount_cents": 5, "duration_ms": 5000}, nil)
	commit.rpc(t, 3, mcp.MethodTasksCancel, map[string]any{"taskId": c2.TaskID})
	commit.ts.waitRecord(t, sideeffects.KindCharge, nil)
	assert.Equal(t, mcp.TaskCancelled, decodeLegacyTask(t, commit.get(t, 4, c2.TaskID)).Status)
}

func TestLegacyTaskList(t *testing.T) {
	ls := startLegacy(t, Config{})
	ids := map[string]bool{}
	for i := range taskListPage + 3 {
		ids[ls.taskCall(t, 10+i, map[string]any{"order_id": "l", "amount_cents": 5, "duration_ms": 1}, nil).TaskID] = true
	}
	var listed []string
	cursor := ""
	pages := 0
	for {
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		m := ls.rpc(t, 2, mcp.MethodTasksList, params)
		require.Nil(t, m.Error)
		var page mcp.ListTasksResult
		require.NoError(t, json.Unmarshal(m.Result, &page))
		pages++
		for _, tk := range page.Tasks {
			listed = append(listed, tk.TaskID)
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	assert.Equal(t, 2, pages)
	assert.Len(t, listed, len(ids))
	for _, id := range listed {
		assert.True(t, ids[id])
	}
}

// TestLegacyTaskStoresAcrossCrash: the file store keeps a finished task's
// result and fails one left working; the memory store forgets both. A new
// session fetches them: tasks are not bound to the session that made them.
func TestLegacyTaskStoresAcrossCrash(t *testing.T) {
	for _, st := range []string{EventStoreFile, EventStoreMemory} {
		t.Run(st, func(t *testing.T) {
			cfg := Config{TaskStore: st, TaskStorePath: filepath.Join(t.TempDir(), "tasks.log")}
			ls := startLegacy(t, cfg)
			done := ls.taskCall(t, 2, map[string]any{"order_id": "d", "amount_cents": 5, "duration_ms": 1}, nil)
			ls.pollTerminal(t, done.TaskID)
			running := ls.taskCall(t, 3, map[string]any{"order_id": "r", "amount_cents": 5, "duration_ms": 10000}, nil)
			require.NoError(t, ls.ts.Close())

			ls2 := startLegacy(t, cfg)
			got := ls2.get(t, 4, done.TaskID)
			left := ls2.get(t, 5, running.TaskID)
			if st == EventStoreMemory {
				require.NotNil(t, got.Error, "the memory store lost the task")
				assert.Equal(t, mcp.CodeInvalidParams, got.Error.Code)
				require.NotNil(t, left.Error)
				return
			}
			assert.Equal(t, mcp.TaskCompleted, decodeLegacyTask(t, got).Status)
			res, _ := toolResult(t, ls2.rpc(t, 6, mcp.MethodTasksResult, map[string]any{"taskId": done.TaskID}))
			assert.False(t, res.IsError, "the result survived")
			assert.Equal(t, mcp.TaskFailed, decodeLegacyTask(t, left).Status)
			interrupted := ls2.rpc(t, 7, mcp.MethodTasksResult, map[string]any{"taskId": running.TaskID})
			require.NotNil(t, interrupted.Error)
			assert.Equal(t, "interrupted_by_restart", interrupted.Error.Message)
		})
	}
}

func TestLegacyTaskDropped(t *testing.T) {
	ls := startLegacy(t, Config{})
	created := ls.taskCall(t, 2, map[string]any{"order_id": "d", "amount_cents": 5, "duration_ms": 200}, nil)
	waiting := make(chan mcp.Message, 1)
	go func() { waiting <- ls.rpc(t, 3, mcp.MethodTasksResult, map[string]any{"taskId": created.TaskID}) }()
	resp := ls.ts.do(t, context.Background(), http.MethodPost, "/control/drop_tasks", nil, "")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	m := <-waiting
	require.NotNil(t, m.Error, "a blocked tasks/result learns its task is gone")
	assert.Equal(t, mcp.CodeInvalidParams, m.Error.Code)
}

// FuzzLegacyTaskParams sends the 2025-11-25 task methods arbitrary params:
// each is answered with a task, a list, a result or a JSON-RPC error,
// never a crash or a hang, and an id no task has is invalid params.
func FuzzLegacyTaskParams(f *testing.F) {
	ts := startServer(f, Config{Recorder: discard{}, Tasks: TasksLegacy})
	sid, version := ts.initialize(f, mcp.Version20251125)
	methods := []string{mcp.MethodTasksGet, mcp.MethodTasksResult, mcp.MethodTasksList, mcp.MethodTasksCancel}
	for _, seed := range []string{`{}`, `{"taskId":"x"}`, `{"taskId":7}`, `{"cursor":"!!"}`, `{"cursor":"eA"}`, `null`, `[]`, `{"taskId":""}`} {
		for m := range uint8(len(methods)) {
			f.Add(seed, m)
		}
	}
	f.Fuzz(func(t *testing.T, params string, m uint8) {
		method := methods[int(m)%len(methods)]
		body := `{"jsonrpc":"2.0","id":5,"method":"` + method + `","params":` + params + `}`
		ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
		defer cancel()
		resp := ts.do(t, ctx, http.MethodPost, "", headers(sid, version), body)
		if resp.StatusCode != http.StatusOK {
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a body that is no request is refused")
			return
		}
		msg := resultOf(t, resp)
		if msg.Error != nil {
			assert.Contains(t, []int{mcp.CodeInvalidParams, mcp.CodeInvalidRequest}, msg.Error.Code, "%s %s: %+v", method, params, msg.Error)
		}
	})
}

// TestLegacyTaskStatusNotification: when a task ends, the session its call
// came on gets notifications/tasks/status with the whole task on its
// standalone stream.
func TestLegacyTaskStatusNotification(t *testing.T) {
	ls := startLegacy(t, Config{})
	h := headers(ls.sid, ls.version)
	h.Del("Content-Type")
	h.Set("Accept", mcp.ContentTypeSSE)
	standalone := ls.ts.open(t, http.MethodGet, h, "")
	created := ls.taskCall(t, 2, map[string]any{"order_id": "n", "amount_cents": 5, "duration_ms": 10}, nil)
	for {
		ev := standalone.next(t)
		if len(ev.Data) == 0 {
			continue // the priming event
		}
		m := decode(t, ev.Data)
		require.Equal(t, mcp.MethodTaskStatus, m.Method)
		var tk mcp.Task
		require.NoError(t, json.Unmarshal(m.Params, &tk))
		assert.Equal(t, created.TaskID, tk.TaskID)
		assert.Equal(t, mcp.TaskCompleted, tk.Status)
		assert.NotNil(t, tk.TTL)
		return
	}
}

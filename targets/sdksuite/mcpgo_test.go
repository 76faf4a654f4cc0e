package sdksuite

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	refclient "github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The tests of this file pin what only the mcp-go adapter has: the SDK's
// own 2025-11-25 tasks (mcpgo.ServerConfig.Tasks); go-sdk v1.8.0 has no
// tasks.

// startMCPGoTasks starts the mcp-go server with its 2025-11-25 tasks,
// writing to a fresh ledger.
func startMCPGoTasks(t *testing.T) (*sideeffects.Memory, string) {
	t.Helper()
	l := sideeffects.NewMemory()
	s, err := mcpgo.NewServer(mcpgo.ServerConfig{Recorder: l, Tasks: mcpgo.TasksLegacy})
	require.NoError(t, err)
	return l, mount(t, s)
}

// rpc posts one request on the raw session and returns its response,
// whether the SDK answered JSON or an event stream.
func (r *raw) rpc(id int, method, params string) mcp.Message {
	r.t.Helper()
	resp := r.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
	if strings.HasPrefix(resp.Header.Get("Content-Type"), mcp.ContentTypeJSON) {
		b, err := io.ReadAll(resp.Body)
		require.NoError(r.t, err)
		m, err := mcp.ParseMessage(b)
		require.NoError(r.t, err, "body %s", b)
		return m
	}
	for _, ev := range sse(r.t, resp) {
		if m, err := mcp.ParseMessage(ev.Data); err == nil && m.IsResponse() {
			return m
		}
	}
	r.t.Fatalf("%s: no response", method)
	return mcp.Message{}
}

func (r *raw) taskCall(id int, order string, durationMS int, task string) mcp.Task {
	r.t.Helper()
	m := r.rpc(id, mcp.MethodToolsCall, fmt.Sprintf(`{"name":"charge","arguments":{"order_id":%q,"amount_cents":5,"duration_ms":%d},"task":%s}`, order, durationMS, task))
	require.Nil(r.t, m.Error, "%+v", m.Error)
	var cr mcp.CreateTaskResult
	require.NoError(r.t, json.Unmarshal(m.Result, &cr))
	require.NotEmpty(r.t, cr.Task.TaskID)
	return cr.Task
}

func (r *raw) getTask(id int, taskID string) mcp.Message {
	return r.rpc(id, mcp.MethodTasksGet, fmt.Sprintf(`{"taskId":%q}`, taskID))
}

func taskOf(t *testing.T, m mcp.Message) mcp.Task {
	t.Helper()
	require.Nil(t, m.Error, "%+v", m.Error)
	var tk mcp.Task
	require.NoError(t, json.Unmarshal(m.Result, &tk))
	return tk
}

func (r *raw) awaitTerminal(taskID string) mcp.Task {
	r.t.Helper()
	var tk mcp.Task
	require.Eventually(r.t, func() bool {
		tk = taskOf(r.t, r.getTask(50, taskID))
		return mcp.TaskTerminal(tk.Status)
	}, 10*time.Second, 5*time.Millisecond)
	return tk
}

// TestMCPGoServerTasks_CurrentBehaviour pins what mcp-go v1.2.1's own
// 2025-11-25 tasks do for the adapter's charge tool (ServerConfig.Tasks
// legacy): the capability in initialize, execution.taskSupport as the
// adapter set it, a CreateTaskResult with no pollInterval and the ttl the
// client asked for (null when it asked for none), tasks/get without the
// result, tasks/result with it and the related-task _meta, as often as
// asked; a task bound to its session (another session gets "task not
// found"); a terminal task refused cancellation; and the ledger: the
// charge on stream task:<id>, the result written only when tasks/result
// hands it out.
func TestMCPGoServerTasks_CurrentBehaviour(t *testing.T) {
	l, url := startMCPGoTasks(t)
	r := rawConnect(t, url+"/mcp")

	caps := r.rpc(2, mcp.MethodToolsList, `{}`)
	assert.Contains(t, string(caps.Result), `"execution":{"taskSupport":"optional"}`)
	init := rawConnect(t, url+"/mcp")
	ir := init.rpc(1, mcp.MethodInitialize, `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`)
	assert.Contains(t, string(ir.Result), `"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`)

	created := r.taskCall(3, "o1", 200, `{}`)
	assert.Equal(t, mcp.TaskWorking, created.Status)
	assert.Nil(t, created.TTL, "no ttl asked for: unlimited")
	assert.Zero(t, created.PollInterval, "mcp-go suggests no poll interval")
	ttl := r.taskCall(4, "o2", 1, `{"ttl":60000}`)
	require.NotNil(t, ttl.TTL)
	assert.Equal(t, int64(60000), *ttl.TTL, "the ttl asked for")

	done := r.awaitTerminal(created.TaskID)
	assert.Equal(t, mcp.TaskCompleted, done.Status)
	assert.NotContains(t, string(r.getTask(5, created.TaskID).Result), "structuredContent")
	assert.Empty(t, l.Of(sideeffects.KindResultWritten), "nothing handed out yet")
	charges := l.Of(sideeffects.KindCharge)
	require.Len(t, charges, 2)

	for i := range 2 {
		res := r.rpc(6+i, mcp.MethodTasksResult, fmt.Sprintf(`{"taskId":%q}`, created.TaskID))
		require.Nil(t, res.Error)
		assert.Contains(t, string(res.Result), `"charged":true`)
		assert.Contains(t, string(res.Result), `"io.modelcontextprotocol/related-task":{"taskId":"`+created.TaskID+`"}`)
	}
	written := l.Of(sideeffects.KindResultWritten)
	require.Len(t, written, 2, "each tasks/result hand-out is recorded")
	assert.Equal(t, "task:"+created.TaskID, written[0].Stream)
	assert.Equal(t, "3", written[0].RequestID, "as the tools/call's result")

	other := rawConnect(t, url+"/mcp")
	lost := other.getTask(2, created.TaskID)
	require.NotNil(t, lost.Error, "tasks are bound to their session")
	assert.Equal(t, mcp.CodeInvalidParams, lost.Error.Code)
	assert.Equal(t, "task not found", lost.Error.Message)

	refused := r.rpc(9, mcp.MethodTasksCancel, fmt.Sprintf(`{"taskId":%q}`, created.TaskID))
	require.NotNil(t, refused.Error)
	assert.Equal(t, mcp.CodeInvalidParams, refused.Error.Code)
	assert.Equal(t, "cannot cancel task in terminal status: completed", refused.Error.Message)
}

// TestMCPGoServerTaskCancelAndTTL_CurrentBehaviour: tasks/cancel turns a
// working task cancelled at once and cancels the handler's context, which
// the adapter's tools do not heed (they run on the host's life, as for a
// dropped connection): the charge still happens and the task stays
// cancelled; tasks/result of it answers a result with no content and no
// isError, as if the call had succeeded with nothing to say. A ttl deletes the task when it
// runs out ("task has expired"), running or not. A new server (a
// restart) knows none of the old tasks: the store is the process's memory.
func TestMCPGoServerTaskCancelAndTTL_CurrentBehaviour(t *testing.T) {
	l, url := startMCPGoTasks(t)
	r := rawConnect(t, url+"/mcp")
	running := r.taskCall(2, "c", 200, `{}`)
	ack := taskOf(t, r.rpc(3, mcp.MethodTasksCancel, fmt.Sprintf(`{"taskId":%q}`, running.TaskID)))
	assert.Equal(t, mcp.TaskCancelled, ack.Status)
	require.Eventually(t, func() bool { return len(l.Of(sideeffects.KindCharge)) == 1 }, 10*time.Second, 5*time.Millisecond,
		"the adapter's tool ignores the cancelled context and charges")
	assert.Equal(t, mcp.TaskCancelled, taskOf(t, r.getTask(4, running.TaskID)).Status)
	empty := r.rpc(7, mcp.MethodTasksResult, fmt.Sprintf(`{"taskId":%q}`, running.TaskID))
	require.Nil(t, empty.Error)
	var res mcp.CallResult
	require.NoError(t, json.Unmarshal(empty.Result, &res))
	assert.Empty(t, res.Content)
	assert.False(t, res.IsError)

	short := r.taskCall(5, "e", 1, `{"ttl":30}`)
	require.Eventually(t, func() bool {
		m := r.getTask(6, short.TaskID)
		return m.Error != nil && m.Error.Message == "task has expired"
	}, 10*time.Second, 5*time.Millisecond)

	_, url2 := startMCPGoTasks(t)
	r2 := rawConnect(t, url2+"/mcp")
	gone := r2.getTask(2, running.TaskID)
	require.NotNil(t, gone.Error)
	assert.Equal(t, "task not found", gone.Error.Message, "the in-memory store does not outlive the server")
}

// TestResumableLegacyTasksAgainstMCPGoServer: the resumable client with
// tasks legacy makes its charge an mcp-go task, polls it across a cut (on
// the same session, which mcp-go binds the task to) and fetches the
// result once: charged once, ok once.
func TestResumableLegacyTasksAgainstMCPGoServer(t *testing.T) {
	l, url := startMCPGoTasks(t)
	p := newProxy(t, url)
	w := newWatch()
	polling := w.on(func(r history.Record) bool { return r.Kind == history.KindTask })
	go func() {
		await(t, polling, "the task handle")
		p.cut(t)
	}()
	run := func(ctx context.Context, opts workload.Options, c workload.Client) error {
		opts.Protocol, opts.Tasks = mcp.Version20251125, refclient.TasksLegacy
		opts.Backoff = workload.Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond, Retries: 8}
		return resumable(ctx, opts, c)
	}
	recs := runWatched(t, run, p.URL+"/mcp", w, charge("c1", 300*time.Millisecond))
	kinds := historyKinds(recs)
	assert.Contains(t, kinds, history.KindTask)
	assert.Equal(t, 1, countIf(kinds, is(history.KindInvoke)))
	assert.Equal(t, 1, countIf(kinds, is(history.KindOK)), "history: %v", kinds)
	assert.Len(t, l.Of(sideeffects.KindCharge), 1)
	assert.Len(t, l.Of(sideeffects.KindResultWritten), 1, "the result fetched once")
}

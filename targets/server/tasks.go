package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Tasks modes (Config.Tasks).
const (
	TasksOff       = "off"
	TasksExtension = "extension"
	// TasksLegacy is the experimental tasks of 2025-11-25 (tools/call with
	// params.task, tasks/get, tasks/result, tasks/list, tasks/cancel) on
	// 2025-11-25 sessions.
	TasksLegacy = "legacy"
)

// Defaults of the task knobs.
const (
	DefaultTaskTTL          = time.Hour
	DefaultTaskPollInterval = 5 * time.Second
)

// taskWire is a Task as the extension puts it on the wire.
type taskWire struct {
	ResultType     string          `json:"resultType"`
	TaskID         string          `json:"taskId"`
	Status         string          `json:"status"`
	StatusMessage  string          `json:"statusMessage,omitempty"`
	CreatedAt      string          `json:"createdAt"`
	LastUpdatedAt  string          `json:"lastUpdatedAt"`
	TTLMs          *int64          `json:"ttlMs"`
	PollIntervalMs int64           `json:"pollIntervalMs"`
	Result         json.RawMessage `json:"result,omitempty"`
	Error          *mcp.Error      `json:"error,omitempty"`
}

func (s *Server) taskWire(t task, resultType string) taskWire {
	w := taskWire{
		ResultType: resultType, TaskID: t.ID, Status: t.Status,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.Updated.UTC().Format(time.RFC3339Nano),
		PollIntervalMs: s.cfg.TaskPollInterval.Milliseconds(), Result: t.Result, Error: t.Error,
	}
	if t.TTL > 0 {
		ms := t.TTL.Milliseconds()
		w.TTLMs = &ms
	}
	if t.Error != nil {
		w.StatusMessage = t.Error.Message
	}
	return w
}

// wantsTasks reports whether a 2026-07-28 request declares the tasks
// extension in its per-request capabilities.
func wantsTasks(f mcp.RequestFields) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(f.Meta.ClientCapabilities, &caps) != nil {
		return false
	}
	_, ok := caps.Extensions[mcp.ExtensionTasks]
	return ok
}

// createTask answers a tools/call with a CreateTaskResult once the task is
// stored, and runs the tool on the server's life: no connection holds it,
// so no closing stream cancels it; only tasks/cancel does, and the tool
// then does what Config.OnCancel says.
func (s *Server) createTask(w http.ResponseWriter, m mcp.Message, lc tools.Call, args json.RawMessage) {
	t, cancelled, err := s.tasks.create(task{Client: lc.Client, RequestID: lc.RequestID, Tool: lc.Tool, OrderID: lc.OrderID, TTL: s.cfg.TaskTTL})
	if err != nil {
		writeRPCError(w, http.StatusOK, m.ID, mcp.CodeInternalError, err.Error())
		return
	}
	lc.Task = t.ID
	s.runTask(*t, lc, args, cancelled)
	writeModernResult(w, m.ID, s.taskWire(*t, mcp.ResultTask))
}

// runTask runs a task's tool on the server's life, for both task shapes:
// no connection holds it, so no closing stream cancels it; only
// tasks/cancel (cancelled) does, and the tool then does what
// Config.OnCancel says.
func (s *Server) runTask(t task, lc tools.Call, args json.RawMessage, cancelled <-chan struct{}) {
	ctx, cancel := context.WithCancelCause(s.toolCtx)
	s.calls.add()
	go func() {
		defer s.calls.done()
		defer cancel(nil)
		out := s.tools.RunRequest(ctx, cancelled, lc, args, func(int, int, func(string, int64)) error { return nil })
		s.settleTask(t, lc, out)
	}()
}

// settleTask stores a finished tool's outcome in its task. A tool the
// server's stop interrupted leaves its task working: the memory store
// loses it with the process, the file store fails it on restart. At
// 2025-11-25 a tool result with isError fails the task (its result is
// still what tasks/result returns), as the specification says.
func (s *Server) settleTask(t task, lc tools.Call, out tools.Outcome) {
	id := t.ID
	switch {
	case out.Interrupted:
		return
	case out.Cancelled:
		err := s.tasks.finish(id, taskCancelled, nil, nil)
		s.taskFinished(t, lc, out, err)
		return
	}
	res, err := out.Result()
	var raw json.RawMessage
	if err == nil {
		raw, err = json.Marshal(res)
	}
	switch {
	case err != nil:
		err = s.tasks.finish(id, taskFailed, nil, &mcp.Error{Code: mcp.CodeInternalError, Message: err.Error()})
	case t.Legacy && res.IsError:
		err = s.tasks.finish(id, taskFailed, raw, nil)
	default:
		err = s.tasks.finish(id, taskCompleted, raw, nil)
	}
	s.taskFinished(t, lc, out, err)
}

func (s *Server) taskFinished(t task, lc tools.Call, out tools.Outcome, err error) {
	if err != nil {
		s.log.Warn("task store", "task", lc.Task, "err", err)
		out.Reason, out.Detail = "store_failed", err.Error()
	}
	s.record(lc.Finished(out))
	if t.Legacy {
		s.notifyTaskStatus(t.ID)
	}
}

// serveTaskMethod answers tasks/get, tasks/update and tasks/cancel. A
// task's result is recorded as written each time tasks/get hands it out
// (stream "task:<id>"), so the checker sees how often it was fetched. No
// tool of this server asks for input, so no task is ever input_required
// and none has an outstanding inputRequests key: tasks/update of a known
// task is acknowledged and its inputResponses ignored, as the extension
// asks of responses to keys not outstanding; of an unknown task it is
// -32602.
func (s *Server) serveTaskMethod(w http.ResponseWriter, m mcp.Message, f mcp.RequestFields) {
	if s.cfg.Tasks != TasksExtension {
		writeRPCError(w, http.StatusNotFound, m.ID, mcp.CodeMethodNotFound, "method not found: "+m.Method+" (tasks are off)")
		return
	}
	if !wantsTasks(f) {
		data, _ := json.Marshal(map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{mcp.ExtensionTasks: map[string]any{}}}})
		writeJSON(w, http.StatusOK, mcp.Message{JSONRPC: "2.0", ID: m.ID, Error: &mcp.Error{
			Code: mcp.CodeMissingClientCapability, Message: "Missing required client capability", Data: data}})
		return
	}
	if m.Method == mcp.MethodTasksUpdate {
		if _, err := s.tasks.get(f.TaskID); err != nil {
			writeRPCError(w, http.StatusOK, m.ID, taskErrorCode(err), "Failed to update task: "+err.Error())
			return
		}
		writeModernResult(w, m.ID, struct {
			ResultType string `json:"resultType"`
		}{mcp.ResultComplete})
		return
	}
	if m.Method == mcp.MethodTasksCancel {
		if _, err := s.tasks.cancel(f.TaskID, false); err != nil {
			writeRPCError(w, http.StatusOK, m.ID, taskErrorCode(err), "Failed to cancel task: "+err.Error())
			return
		}
		writeModernResult(w, m.ID, struct {
			ResultType string `json:"resultType"`
		}{mcp.ResultComplete})
		return
	}
	t, err := s.tasks.get(f.TaskID)
	if err != nil {
		writeRPCError(w, http.StatusOK, m.ID, taskErrorCode(err), "Failed to retrieve task: "+err.Error())
		return
	}
	if t.Status == taskCompleted {
		lc := tools.Call{Tool: t.Tool, OrderID: t.OrderID, Client: t.Client, RequestID: t.RequestID, Task: t.ID}
		var res mcp.CallResult
		_ = json.Unmarshal(t.Result, &res)
		s.record(lc.ResultWritten("task:"+t.ID, 0, res.IsError))
	}
	writeModernResult(w, m.ID, s.taskWire(t, mcp.ResultComplete))
}

// taskErrorCode is the JSON-RPC code of a task store's error: invalid
// params for a task id the store does not (or no longer) hold, internal
// error for a store that failed (a shared journal out of reach), which is
// no news about the task.
func taskErrorCode(err error) int {
	if errors.Is(err, errTaskNotFound) || errors.Is(err, errTaskExpired) || errors.Is(err, errTaskElsewhere) ||
		errors.Is(err, errTaskTerminal) || errors.Is(err, errBadCursor) {
		return mcp.CodeInvalidParams
	}
	return mcp.CodeInternalError
}

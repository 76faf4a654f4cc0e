package server

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The experimental tasks of 2025-11-25 (Config.Tasks "legacy"), on
// sessions. They share the task store, its journals and the tools' run
// with the 2026-07-28 extension (tasks.go, taskstore.go); what differs is
// the wire: the capability declared in initialize, a CreateTaskResult
// answering a tools/call with params.task, tasks/get without the result,
// tasks/result blocking until the task is terminal, tasks/list and a
// tasks/cancel that turns the task cancelled before it answers.

// taskListPage is how many tasks one tasks/list answer holds at most.
const taskListPage = 50

// legacyTasks reports whether sess speaks the 2025-11-25 tasks: the server
// runs them and the session negotiated 2025-11-25, where they exist.
func (s *Server) legacyTasks(sess *session) bool {
	return s.cfg.Tasks == TasksLegacy && s.tasks != nil && sess.version == mcp.Version20251125
}

// taskToolList is the tools/list result on a session with tasks: every
// tool may be called as a task or not (execution.taskSupport optional).
var taskToolList = func() json.RawMessage {
	type execution struct {
		TaskSupport string `json:"taskSupport"`
	}
	type tool struct {
		tools.Definition
		Execution execution `json:"execution"`
	}
	var l struct {
		Tools []tool `json:"tools"`
	}
	for _, d := range tools.Definitions() {
		l.Tools = append(l.Tools, tool{Definition: d, Execution: execution{TaskSupport: mcp.TaskSupportOptional}})
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err) // the definitions are constants
	}
	return b
}()

// legacyTaskWire is t as a 2025-11-25 Task.
func (s *Server) legacyTaskWire(t task) mcp.Task {
	w := mcp.Task{
		TaskID: t.ID, Status: t.Status,
		CreatedAt: t.Created.UTC().Format(time.RFC3339Nano), LastUpdatedAt: t.Updated.UTC().Format(time.RFC3339Nano),
		PollInterval: s.cfg.TaskPollInterval.Milliseconds(),
	}
	if t.TTL > 0 {
		ms := t.TTL.Milliseconds()
		w.TTL = &ms
	}
	switch {
	case t.Error != nil:
		w.StatusMessage = t.Error.Message
	case t.Status == taskCancelled:
		w.StatusMessage = "The task was cancelled by request."
	case t.Status == taskFailed:
		w.StatusMessage = "The tool returned an error result."
	}
	return w
}

// taskTTL is the lifetime of a new task: what the client asked for, up to
// Config.TaskTTL (the specification lets a receiver override it).
func (s *Server) taskTTL(p *mcp.TaskParams) time.Duration {
	ttl := s.cfg.TaskTTL
	if p != nil && p.TTL != nil && *p.TTL > 0 {
		ttl = min(ttl, time.Duration(*p.TTL)*time.Millisecond)
	}
	return ttl
}

// createLegacyTask answers a task-augmented tools/call with a
// CreateTaskResult once the task is stored, and runs the tool on the
// server's life (runTask). The answer is no tool result: nothing is
// recorded as written until tasks/result hands the result out.
func (s *Server) createLegacyTask(c *call) {
	lc := c.ledgerCall()
	t, cancelled, err := s.tasks.create(task{Client: lc.Client, RequestID: lc.RequestID, Tool: lc.Tool, OrderID: lc.OrderID,
		TTL: s.taskTTL(c.task), Legacy: true, Session: c.sess.id})
	if err != nil {
		s.respond(c, mcp.NewError(c.id, mcp.CodeInternalError, err.Error()), false)
		return
	}
	lc.Task = t.ID
	s.runTask(*t, lc, c.args, cancelled)
	s.answer(c, mcp.CreateTaskResult{Task: s.legacyTaskWire(*t)})
}

// taskRequest is the params of tasks/get, tasks/result, tasks/cancel and
// tasks/list.
type taskRequest struct {
	TaskID string `json:"taskId"`
	Cursor string `json:"cursor"`
}

// serveLegacyTaskMethod answers the tasks/* methods of 2025-11-25. An id
// the store does not hold (never, or no longer: expired, lost with a
// memory store, dropped) is invalid params, as the specification asks.
func (s *Server) serveLegacyTaskMethod(c *call) {
	var p taskRequest
	if len(c.params) > 0 && json.Unmarshal(c.params, &p) != nil {
		s.respond(c, mcp.NewError(c.id, mcp.CodeInvalidParams, "malformed "+c.method+" params"), false)
		return
	}
	if p.TaskID == "" && c.method != mcp.MethodTasksList {
		s.respond(c, mcp.NewError(c.id, mcp.CodeInvalidParams, c.method+" needs params.taskId"), false)
		return
	}
	switch c.method {
	case mcp.MethodTasksGet:
		t, err := s.tasks.get(p.TaskID)
		if err != nil {
			s.taskError(c, "Failed to retrieve task: ", err)
			return
		}
		s.answer(c, s.legacyTaskWire(t))
	case mcp.MethodTasksCancel:
		t, err := s.tasks.cancel(p.TaskID, true)
		if err != nil {
			s.taskError(c, "Cannot cancel task: ", err)
			return
		}
		s.notifyTaskStatus(t.ID)
		s.answer(c, s.legacyTaskWire(t))
	case mcp.MethodTasksList:
		s.listTasks(c, p.Cursor)
	case mcp.MethodTasksResult:
		s.awaitTaskResult(c, p.TaskID)
	}
}

func (s *Server) taskError(c *call, prefix string, err error) {
	s.respond(c, mcp.NewError(c.id, taskErrorCode(err), prefix+err.Error()), false)
}

// listTasks answers tasks/list: the 2025-11-25 tasks, oldest first, a page
// at a time; the cursor is the last task id of the page before, opaque to
// the client.
func (s *Server) listTasks(c *call, cursor string) {
	after := ""
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil || len(b) == 0 {
			s.taskError(c, "Failed to list tasks: ", errBadCursor)
			return
		}
		after = string(b)
	}
	page, more, err := s.tasks.list(true, after, taskListPage)
	if err != nil {
		s.taskError(c, "Failed to list tasks: ", err)
		return
	}
	res := mcp.ListTasksResult{Tasks: make([]mcp.Task, 0, len(page))}
	for _, t := range page {
		res.Tasks = append(res.Tasks, s.legacyTaskWire(t))
	}
	if more {
		res.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(page[len(page)-1].ID))
	}
	s.answer(c, res)
}

// awaitTaskResult answers tasks/result once the task is terminal, on its
// own goroutine: the response blocks until then, as the specification
// asks, and the server's drain waits for it. The task's result is recorded
// as written (the task's call, stream task:<id>) each time one is handed
// out, so the checker sees how often it was fetched. A task that failed
// without a tool result (interrupted by a restart, a store that failed)
// answers the JSON-RPC error it ended with; a cancelled one, an error
// saying so.
func (s *Server) awaitTaskResult(c *call, id string) {
	s.calls.add()
	go func() {
		defer s.calls.done()
		t, err := s.tasks.wait(s.toolCtx, id, s.cfg.TaskPollInterval)
		switch {
		case errors.Is(err, errTaskNotFound), errors.Is(err, errTaskExpired):
			s.taskError(c, "Failed to retrieve task: ", err)
			return
		case err != nil:
			s.respond(c, mcp.NewError(c.id, mcp.CodeInternalError, "tasks/result: "+err.Error()), false)
			return
		case t.Status == taskCancelled:
			s.respond(c, mcp.NewError(c.id, mcp.CodeInternalError, "the task was cancelled"), false)
			return
		case t.Error != nil:
			s.respond(c, mcp.Message{JSONRPC: "2.0", ID: c.id, Error: t.Error}, false)
			return
		}
		var res map[string]any
		if err := json.Unmarshal(t.Result, &res); err != nil {
			s.respond(c, mcp.NewError(c.id, mcp.CodeInternalError, "tasks/result: stored result: "+err.Error()), false)
			return
		}
		res["_meta"] = map[string]any{mcp.MetaRelatedTask: mcp.RelatedTask{TaskID: t.ID}}
		isError, _ := res["isError"].(bool)
		c.fetch = &tools.Call{Tool: t.Tool, OrderID: t.OrderID, Session: t.Session, Client: t.Client, RequestID: t.RequestID, Task: t.ID}
		msg, err := mcp.NewResult(c.id, res)
		if err != nil {
			msg = mcp.NewError(c.id, mcp.CodeInternalError, err.Error())
		}
		s.respond(c, msg, isError)
	}()
}

// notifyTaskStatus sends notifications/tasks/status with the task's state
// on the standalone stream of the session its call came on, while that
// session lives on this server. The notification is optional, and no
// client may count on it: a session gone takes none.
func (s *Server) notifyTaskStatus(id string) {
	t, err := s.tasks.get(id)
	if err != nil || !t.Legacy {
		return
	}
	s.mu.Lock()
	sess := s.sessions[t.Session]
	s.mu.Unlock()
	if sess == nil {
		return
	}
	note, err := mcp.NewNotification(mcp.MethodTaskStatus, s.legacyTaskWire(t))
	if err != nil {
		return
	}
	data, err := json.Marshal(note)
	if err != nil {
		return
	}
	if _, err := sess.log.Append(store.Standalone, data, "", nil); err != nil && !errors.Is(err, store.ErrSessionClosed) {
		s.log.Warn("task status notification", "task", id, "err", err)
	}
}

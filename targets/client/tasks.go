package client

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// defaultTaskPoll is the polling interval when the server suggests none
// and the client's backoff has no initial delay.
const defaultTaskPoll = time.Second

// pollTask follows a call the server answered with a task (the 2026-07-28
// tasks extension, or the experimental tasks of 2025-11-25) to its
// outcome. The task id is made durable first, so a restarted client polls
// the same task instead of calling again. Polls are short requests: a
// break or a 5xx on one is recorded and the poll repeated after the
// backoff (polling is harmless to repeat), up to Backoff.Retries in a row.
// At 2025-11-25 a 404 says the session is gone, not the task: the client
// opens a new session and polls on (tasks outlive sessions). A task the
// server no longer knows is a surfaced loss: the call's outcome is
// unknown, and it is not called again.
func (r *resumable) pollTask(ctx context.Context, s *stream, th *taskHandle) error {
	if r.cur.InFlight != nil {
		r.cur.InFlight.TaskID, r.cur.InFlight.TaskLegacy = th.id, th.legacy
		if th.legacy {
			r.cur.InFlight.TaskSession = s.session
		}
	}
	if err := r.save(); err != nil {
		return r.halt(ctx, s, err)
	}
	r.record(history.Record{Kind: history.KindTask, Call: s.call.ID, Session: s.session, RequestID: s.requestID, Detail: th.id})
	poll := th.poll
	if poll <= 0 { // the server suggests none (mcp-go): poll at the backoff's pace
		poll = cmp.Or(r.opts.Backoff.Initial, defaultTaskPoll)
	}
	failures := 0
	for {
		delay := poll
		if failures > 0 {
			delay = r.backoff(failures, poll)
		}
		if err := runclock.Sleep(ctx, delay); err != nil {
			return r.halt(ctx, s, err)
		}
		if th.legacy {
			if err := r.ensureSession(ctx); err != nil {
				return r.halt(ctx, s, err)
			}
		}
		get := r.getTask
		if th.legacy {
			get = r.getLegacyTask
		}
		out, next, cl, err := get(ctx, s, th.id)
		switch {
		case err != nil:
			return r.halt(ctx, s, err)
		case out != nil:
			return r.settle(s, out)
		case cl != nil:
			r.breakRecord(s, *cl)
			if th.legacy && cl.Status == http.StatusNotFound {
				r.dropSession("status_404")
				r.cur.Session, r.cur.Protocol = "", ""
			}
			if failures++; failures > r.opts.Backoff.Retries {
				return r.settle(s, unknownOutcome(fmt.Sprintf("task %s: %d polls in a row failed, the last %s", th.id, failures, cl.Class())))
			}
		default:
			failures = 0
			if next > 0 {
				poll = next
			}
		}
	}
}

// getTask sends one tasks/get. It returns the call's outcome once the task
// is terminal or lost, or a close when the poll itself broke, or neither
// while the task works (with the interval the server suggests now).
func (r *resumable) getTask(ctx context.Context, s *stream, taskID string) (*outcome, time.Duration, *Close, error) {
	params, err := json.Marshal(struct {
		TaskID string           `json:"taskId"`
		Meta   *mcp.RequestMeta `json:"_meta"`
	}{taskID, r.conn.meta(nil)})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("tasks/get: %w", err)
	}
	m, cl, err := r.taskRPC(ctx, mcp.MethodTasksGet, params)
	if err != nil || cl != nil {
		return nil, 0, cl, err
	}
	if m.Error != nil && m.Error.Code != mcp.CodeInvalidParams {
		// Not an answer about the task (the server's store failed, say):
		// polled again after the backoff, like a cut.
		return nil, 0, &Close{Err: fmt.Errorf("tasks/get: %s (%d)", m.Error.Message, m.Error.Code)}, nil
	}
	if m.Error != nil {
		return r.taskLost(s, taskID, m.Error), 0, nil, nil
	}
	var t struct {
		Status         string          `json:"status"`
		PollIntervalMs int64           `json:"pollIntervalMs"`
		Result         json.RawMessage `json:"result"`
		Error          *mcp.Error      `json:"error"`
	}
	if err := json.Unmarshal(m.Result, &t); err != nil {
		return unknownOutcome(fmt.Sprintf("task %s: unreadable tasks/get result: %v", taskID, err)), 0, nil, nil
	}
	switch t.Status {
	case "working", "input_required":
		return nil, time.Duration(t.PollIntervalMs) * time.Millisecond, nil, nil
	case "completed":
		out := resultOf(mcp.Message{JSONRPC: "2.0", ID: m.ID, Result: t.Result}, "")
		out.reason = "task " + taskID + " completed"
		if out.kind != history.KindOK && len(t.Result) > 0 {
			out.reason += ": " + string(t.Result)
		}
		return out, 0, nil, nil
	case "failed":
		msg := "failed"
		if t.Error != nil {
			msg = t.Error.Message
		}
		return unknownOutcome(fmt.Sprintf("task %s failed: %s", taskID, msg)), 0, nil, nil
	}
	return unknownOutcome(fmt.Sprintf("task %s ended %s", taskID, t.Status)), 0, nil, nil
}

// taskRPC sends one request about a task and reads its answer. A break,
// or an answer other than 200, is the close it amounts to: no news about
// the task.
func (r *resumable) taskRPC(ctx context.Context, method string, params json.RawMessage) (mcp.Message, *Close, error) {
	req := mcp.Message{JSONRPC: "2.0", ID: r.requestID(r.takeID()), Method: method, Params: params}
	x, err := r.conn.post(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return mcp.Message{}, nil, ctx.Err()
		}
		return mcp.Message{}, &Close{Err: err}, nil
	}
	defer x.close()
	if x.resp.StatusCode != http.StatusOK {
		cl := Close{Status: x.resp.StatusCode}
		if se, ok := okStatus(x.resp).(*statusError); ok {
			cl.Body = se.body
		}
		return mcp.Message{}, &cl, nil
	}
	m, err := readResponse(ctx, x, req.ID)
	if err != nil {
		if ctx.Err() != nil {
			return mcp.Message{}, nil, ctx.Err()
		}
		return mcp.Message{}, &Close{Err: err}, nil
	}
	return m, nil, nil
}

// taskLost settles a poll the server answered with "no such task"
// (-32602): the call's thread to its outcome broke as surely as a cut
// stream would: recorded as a break (task_lost), then the outcome is
// unknown.
func (r *resumable) taskLost(s *stream, taskID string, e *mcp.Error) *outcome {
	r.record(history.Record{Kind: history.KindStreamBreak, Call: s.call.ID, Session: s.session, RequestID: s.requestID,
		Reason: "task_lost", Detail: e.Message})
	return unknownOutcome(fmt.Sprintf("task %s lost: %s", taskID, e.Message))
}

// getLegacyTask sends one tasks/get of a 2025-11-25 task and, once the
// task is terminal, one tasks/result for its result, so the result is
// fetched once (again only when that fetch broke). It returns like
// getTask. The result of a completed task, or of one failed with the
// tool's own error result, is the call's outcome; a task failed without
// one (interrupted by a restart) or cancelled is an unknown outcome.
func (r *resumable) getLegacyTask(ctx context.Context, s *stream, taskID string) (*outcome, time.Duration, *Close, error) {
	params, err := json.Marshal(struct {
		TaskID string `json:"taskId"`
	}{taskID})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("tasks/get: %w", err)
	}
	m, cl, err := r.taskRPC(ctx, mcp.MethodTasksGet, params)
	switch {
	case err != nil || cl != nil:
		return nil, 0, cl, err
	case m.Error != nil && m.Error.Code == mcp.CodeInvalidParams:
		return r.taskLost(s, taskID, m.Error), 0, nil, nil
	case m.Error != nil:
		return nil, 0, &Close{Err: fmt.Errorf("tasks/get: %s (%d)", m.Error.Message, m.Error.Code)}, nil
	}
	var t mcp.Task
	if err := json.Unmarshal(m.Result, &t); err != nil {
		return unknownOutcome(fmt.Sprintf("task %s: unreadable tasks/get result: %v", taskID, err)), 0, nil, nil
	}
	if !mcp.TaskTerminal(t.Status) {
		return nil, time.Duration(t.PollInterval) * time.Millisecond, nil, nil
	}
	if t.Status == mcp.TaskCancelled {
		return unknownOutcome(fmt.Sprintf("task %s ended cancelled: %s", taskID, t.StatusMessage)), 0, nil, nil
	}
	res, cl, err := r.taskRPC(ctx, mcp.MethodTasksResult, params)
	switch {
	case err != nil || cl != nil:
		return nil, 0, cl, err
	case res.Error != nil && res.Error.Code == mcp.CodeInvalidParams:
		return r.taskLost(s, taskID, res.Error), 0, nil, nil
	case res.Error != nil:
		return unknownOutcome(fmt.Sprintf("task %s %s: %s", taskID, t.Status, res.Error.Message)), 0, nil, nil
	}
	out := resultOf(res, "")
	out.reason = cmp.Or(out.reason, "task "+taskID+" "+t.Status)
	return out, 0, nil, nil
}

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
)

// defaultTaskPoll is the polling interval when the server suggests none.
const defaultTaskPoll = time.Second

// pollTask follows a call the server answered with a task (the 2026-07-28
// tasks extension) to its outcome. The task id is made durable first, so a
// restarted client polls the same task instead of calling again. Polls are
// short requests: a break or a 5xx on one is recorded and the poll repeated
// after the backoff (polling is harmless to repeat), up to Backoff.Retries
// in a row. A task the server no longer knows is a surfaced loss: the
// call's outcome is unknown, and it is not called again.
func (r *resumable) pollTask(ctx context.Context, s *stream, th *taskHandle) error {
	if r.cur.InFlight != nil {
		r.cur.InFlight.TaskID = th.id
	}
	if err := r.save(); err != nil {
		return r.halt(ctx, s, err)
	}
	r.record(history.Record{Kind: history.KindTask, Call: s.call.ID, Session: s.session, RequestID: s.requestID, Detail: th.id})
	poll := th.poll
	if poll <= 0 {
		poll = defaultTaskPoll
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
		out, next, cl, err := r.getTask(ctx, s, th.id)
		switch {
		case err != nil:
			return r.halt(ctx, s, err)
		case out != nil:
			return r.settle(s, out)
		case cl != nil:
			r.breakRecord(s, *cl)
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
		TaskID string               `json:"taskId"`
		Meta   *mcpwire.RequestMeta `json:"_meta"`
	}{taskID, r.conn.meta(nil)})
	if err != nil {
		return nil, 0, nil, fmt.Errorf("tasks/get: %w", err)
	}
	req := mcpwire.Message{JSONRPC: "2.0", ID: r.requestID(r.takeID()), Method: mcpwire.MethodTasksGet, Params: params}
	x, err := r.conn.post(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, nil, ctx.Err()
		}
		return nil, 0, &Close{Err: err}, nil
	}
	defer x.close()
	if x.resp.StatusCode != http.StatusOK {
		cl := Close{Status: x.resp.StatusCode}
		if se, ok := okStatus(x.resp).(*statusError); ok {
			cl.Body = se.body
		}
		return nil, 0, &cl, nil
	}
	m, err := readResponse(ctx, x, req.ID)
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, nil, ctx.Err()
		}
		return nil, 0, &Close{Err: err}, nil
	}
	if m.Error != nil && m.Error.Code != mcpwire.CodeInvalidParams {
		// Not an answer about the task (the server's store failed, say):
		// polled again after the backoff, like a cut.
		return nil, 0, &Close{Err: fmt.Errorf("tasks/get: %s (%d)", m.Error.Message, m.Error.Code)}, nil
	}
	if m.Error != nil {
		// The server does not hold the task: the call's thread to its
		// outcome broke as surely as a cut stream would: recorded as a
		// break, then the outcome is unknown.
		r.record(history.Record{Kind: history.KindStreamBreak, Call: s.call.ID, Session: s.session, RequestID: s.requestID,
			Reason: "task_lost", Detail: m.Error.Message})
		return unknownOutcome(fmt.Sprintf("task %s lost: %s", taskID, m.Error.Message)), 0, nil, nil
	}
	var t struct {
		Status         string          `json:"status"`
		PollIntervalMs int64           `json:"pollIntervalMs"`
		Result         json.RawMessage `json:"result"`
		Error          *mcpwire.Error  `json:"error"`
	}
	if err := json.Unmarshal(m.Result, &t); err != nil {
		return unknownOutcome(fmt.Sprintf("task %s: unreadable tasks/get result: %v", taskID, err)), 0, nil, nil
	}
	switch t.Status {
	case "working", "input_required":
		return nil, time.Duration(t.PollIntervalMs) * time.Millisecond, nil, nil
	case "completed":
		out := resultOf(mcpwire.Message{JSONRPC: "2.0", ID: req.ID, Result: t.Result}, "")
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

package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ErrorInterrupted is the structuredContent error of a result the server
// wrote for a call a restart interrupted: the side effect may or may not
// have happened.
const ErrorInterrupted = "interrupted_by_restart"

// stream is one attempt at a call, from the client's side: the tools/call
// request and the response stream it opened, resumed across breaks.
type stream struct {
	call      workload.Call
	req       mcp.Message
	session   string
	requestID string
	attempt   int
	// lastID is the last event id seen, and for a resumable client the last
	// one persisted.
	lastID string
	// retry is the server's latest SSE retry field.
	retry time.Duration
	// persist, if set, makes an event id durable before the event is
	// handed on.
	persist func(id string) error
}

// outcome is how a call ended.
type outcome struct {
	kind    history.Kind
	eventID string
	reason  string
	read    bool // the outcome was read from the call's response
	// task, when set, is not an outcome but the task the server answered
	// the call with: its outcome is to be polled for.
	task *taskHandle
}

// taskHandle is a CreateTaskResult: the task to poll and how often.
type taskHandle struct {
	id   string
	poll time.Duration
	// legacy marks a 2025-11-25 task: polled by tasks/get, its result
	// fetched by tasks/result.
	legacy bool
}

func unknownOutcome(reason string) *outcome {
	return &outcome{kind: history.KindUnknown, reason: reason}
}

// read follows an exchange until the call's result arrives or the stream
// breaks. It returns an error only when ctx ends or an event id cannot be
// persisted; progressed reports that an event with an id arrived.
func (a *agent) read(ctx context.Context, s *stream, x *exchange) (out *outcome, cl Close, progressed bool, err error) {
	defer x.close()
	if x.resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(x.resp.Body, maxErrorBody))
		return nil, Close{Status: x.resp.StatusCode, Body: body, LastEventID: s.lastID}, false, nil
	}
	mt, _, _ := mime.ParseMediaType(x.resp.Header.Get("Content-Type"))
	switch mt {
	case mcp.ContentTypeJSON:
		return a.readJSONResult(ctx, s, x)
	case mcp.ContentTypeSSE:
		return a.readEvents(ctx, s, x)
	}
	return nil, Close{Err: fmt.Errorf("unexpected content type %q", mt), LastEventID: s.lastID}, false, nil
}

func (a *agent) readJSONResult(ctx context.Context, s *stream, x *exchange) (*outcome, Close, bool, error) {
	m, err := readJSON(ctx, x)
	switch {
	case ctx.Err() != nil:
		return nil, Close{}, false, ctx.Err()
	case err != nil:
		return nil, Close{Err: err, LastEventID: s.lastID}, false, nil
	case m.IDString() != s.requestID:
		return nil, Close{Err: fmt.Errorf("JSON answer to request %s, want %s", m.IDString(), s.requestID), LastEventID: s.lastID}, false, nil
	}
	x.answered = true
	return resultOf(m, ""), Close{}, false, nil
}

func (a *agent) readEvents(ctx context.Context, s *stream, x *exchange) (*outcome, Close, bool, error) {
	er := mcp.NewEventReader(x.resp.Body)
	er.OnActivity = x.activity
	progressed := false
	for {
		ev, err := er.Next()
		if err != nil {
			if err = x.err(ctx, err); ctx.Err() != nil {
				return nil, Close{}, progressed, ctx.Err()
			}
			return nil, Close{Err: err, LastEventID: s.lastID}, progressed, nil
		}
		if ev.Retry > 0 {
			s.retry = ev.Retry
		}
		if ev.Type == mcp.EventClose {
			return nil, Close{CloseEvent: true, LastEventID: s.lastID}, progressed, nil
		}
		out, err := a.handle(s, ev)
		if err != nil {
			return nil, Close{}, progressed, err
		}
		progressed = progressed || ev.ID != ""
		if out != nil {
			x.answered = true
			return out, Close{}, progressed, nil
		}
	}
}

// handle takes one event: it moves the cursor (durably first, unless the
// event is the result, whose cursor move the caller makes together with
// settling the call) and records what the event carried.
func (a *agent) handle(s *stream, ev mcp.Event) (*outcome, error) {
	var msg *mcp.Message
	if len(ev.Data) > 0 {
		m, err := mcp.ParseMessage(ev.Data)
		if err != nil {
			a.log.Warn("unreadable event", "event_id", ev.ID, "err", err)
		} else {
			msg = &m
		}
	}
	var out *outcome
	if msg != nil && msg.IsResponse() && msg.IDString() == s.requestID {
		out = resultOf(*msg, ev.ID)
	}
	if ev.ID != "" {
		if out == nil && s.persist != nil {
			if err := s.persist(ev.ID); err != nil {
				return nil, err
			}
		}
		s.lastID = ev.ID
	}
	switch {
	case out != nil:
		return out, nil
	case len(ev.Data) == 0 && ev.ID != "":
		a.eventRecord(s, ev.ID, 0, "priming")
	case msg != nil && msg.IsNotification():
		a.eventRecord(s, ev.ID, progressSeq(msg), msg.Method)
	}
	return nil, nil
}

func (a *agent) eventRecord(s *stream, id string, seq int64, detail string) {
	a.record(history.Record{
		Kind: history.KindEvent, Call: s.call.ID, Session: s.session, RequestID: s.requestID,
		EventID: mcp.EventNumber(id), Seq: seq, Detail: detail,
	})
}

func progressSeq(m *mcp.Message) int64 {
	if m.Method != mcp.MethodProgress {
		return 0
	}
	var p mcp.ProgressParams
	if json.Unmarshal(m.Params, &p) != nil {
		return 0
	}
	return int64(p.Progress)
}

// resultOf reads a tools/call response: a JSON-RPC error or an isError
// result fails, a result interrupted by a server restart is unknown, and
// anything else is ok.
func resultOf(m mcp.Message, eventID string) *outcome {
	if m.Error != nil {
		return &outcome{kind: history.KindFail, eventID: eventID, reason: m.Error.Error(), read: true}
	}
	var rt struct {
		ResultType     string    `json:"resultType"`
		TaskID         string    `json:"taskId"`
		PollIntervalMs int64     `json:"pollIntervalMs"`
		Task           *mcp.Task `json:"task"`
	}
	if json.Unmarshal(m.Result, &rt) == nil {
		switch {
		case rt.ResultType == mcp.ResultTask && rt.TaskID != "":
			return &outcome{task: &taskHandle{id: rt.TaskID, poll: time.Duration(rt.PollIntervalMs) * time.Millisecond}}
		case rt.Task != nil && rt.Task.TaskID != "": // a 2025-11-25 CreateTaskResult
			return &outcome{task: &taskHandle{id: rt.Task.TaskID, poll: time.Duration(rt.Task.PollInterval) * time.Millisecond, legacy: true}}
		}
	}
	var r mcp.CallResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return unknownOutcome(fmt.Sprintf("unreadable result: %v", err))
	}
	var sc struct {
		Error string `json:"error"`
	}
	if len(r.StructuredContent) > 0 {
		_ = json.Unmarshal(r.StructuredContent, &sc) // a non-object is no error marker
	}
	switch {
	case sc.Error == ErrorInterrupted:
		return &outcome{kind: history.KindUnknown, eventID: eventID, reason: ErrorInterrupted, read: true}
	case r.IsError:
		reason := sc.Error
		if reason == "" && len(r.Content) > 0 {
			reason = r.Content[0].Text
		}
		return &outcome{kind: history.KindFail, eventID: eventID, reason: reason, read: true}
	}
	return &outcome{kind: history.KindOK, eventID: eventID, read: true}
}

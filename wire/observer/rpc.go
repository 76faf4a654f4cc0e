package observer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The _meta keys a record reads: those of a 2026-07-28 request that name
// its client and protocol, and the task a 2025-11-25 message relates to.
const (
	metaClientInfo      = "io.modelcontextprotocol/clientInfo"
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaRelatedTask     = "io.modelcontextprotocol/related-task"
)

// bodyMessages reads a JSON body (a POST body, or a response body with a JSON
// media type) as JSON-RPC: one message, or a 2025-03-26 batch. A batch with
// an unreadable element keeps the readable ones and gives the other a
// problem; a body that is not JSON-RPC at all is one message with a problem.
func bodyMessages(b []byte) []wire.Message {
	msgs, batch, err := mcp.ParseBody(b)
	if err == nil {
		out := make([]wire.Message, len(msgs))
		for i := range msgs {
			out[i] = fromRPC(&msgs[i])
		}
		return out
	}
	var raws []json.RawMessage
	if !batch || json.Unmarshal(b, &raws) != nil || len(raws) == 0 {
		return []wire.Message{{Problem: err.Error()}}
	}
	out := make([]wire.Message, len(raws))
	for i, raw := range raws {
		out[i] = eventMessage(raw)
	}
	return out
}

// eventMessage reads the data of one SSE event (or one batch element) as a
// single JSON-RPC message.
func eventMessage(b []byte) wire.Message {
	var m wire.Message
	if fastMessage(b, &m, new([2]float64), nil) {
		return m
	}
	return slowMessage(b)
}

// slowMessage reads one message with package mcp, the reference the fast path
// is held to.
func slowMessage(b []byte) wire.Message {
	m, err := mcp.ParseMessage(b)
	if err != nil {
		return wire.Message{Problem: err.Error()}
	}
	return fromRPC(&m)
}

// fromRPC keeps what a record needs of a valid message.
func fromRPC(m *mcp.Message) wire.Message {
	out := wire.Message{Method: m.Method, Response: m.Method == ""}
	out.ID = idText(m.ID)
	var err error
	switch {
	case m.Error != nil:
		out.IsError, out.ErrorCode, out.ErrorMessage = true, m.Error.Code, m.Error.Message
	case out.Response:
		err = readResult(&out, m.Result)
	default:
		err = readParams(&out, m.Method, m.Params)
	}
	if err != nil {
		out.Problem = err.Error()
	}
	return out
}

// result holds the fields of a result that a record keeps. Fields are raw
// so that a result of another shape (a tool's own "status", say) is no
// problem; only the ones read must have the right type.
type result struct {
	IsError         json.RawMessage `json:"isError"`
	ResultType      json.RawMessage `json:"resultType"`
	ProtocolVersion json.RawMessage `json:"protocolVersion"`
	TaskID          json.RawMessage `json:"taskId"`
	Status          json.RawMessage `json:"status"`
	Task            json.RawMessage `json:"task"`
	Meta            *struct {
		RelatedTask json.RawMessage `json:"io.modelcontextprotocol/related-task"`
	} `json:"_meta"`
}

// task is the task object of a 2025-11-25 task-augmented result.
type task struct {
	TaskID json.RawMessage `json:"taskId"`
	Status json.RawMessage `json:"status"`
}

func readResult(out *wire.Message, raw json.RawMessage) error {
	if !isObject(raw) {
		return nil
	}
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("result: %w", err)
	}
	var isError bool
	errs := []error{
		field(&isError, r.IsError, "result.isError"),
		field(&out.ResultType, r.ResultType, "result.resultType"),
		field(&out.Protocol, r.ProtocolVersion, "result.protocolVersion"),
	}
	out.IsError = isError
	switch {
	case present(r.TaskID):
		errs = append(errs, field(&out.TaskID, r.TaskID, "result.taskId"), field(&out.TaskStatus, r.Status, "result.status"))
	case present(r.Task):
		var t task
		if err := field(&t, r.Task, "result.task"); err != nil {
			errs = append(errs, err)
			break
		}
		errs = append(errs, field(&out.TaskID, t.TaskID, "result.task.taskId"), field(&out.TaskStatus, t.Status, "result.task.status"))
	}
	if r.Meta != nil && out.TaskID == "" {
		errs = append(errs, relatedTask(&out.TaskID, r.Meta.RelatedTask, "result._meta."+metaRelatedTask))
	}
	return errors.Join(errs...)
}

// relatedTask reads the task id of a related-task _meta entry.
func relatedTask(dst *string, raw json.RawMessage, name string) error {
	var t struct {
		TaskID json.RawMessage `json:"taskId"`
	}
	if err := field(&t, raw, name); err != nil {
		return err
	}
	return field(dst, t.TaskID, name+".taskId")
}

// params holds the fields of a request's or notification's params that a
// record keeps, raw for the same reason as [result].
type params struct {
	Name            json.RawMessage `json:"name"`
	Arguments       json.RawMessage `json:"arguments"`
	ProtocolVersion json.RawMessage `json:"protocolVersion"`
	ClientInfo      json.RawMessage `json:"clientInfo"`
	ProgressToken   json.RawMessage `json:"progressToken"`
	Progress        json.RawMessage `json:"progress"`
	Total           json.RawMessage `json:"total"`
	RequestID       json.RawMessage `json:"requestId"`
	TaskID          json.RawMessage `json:"taskId"`
	Meta            *struct {
		ProgressToken   json.RawMessage `json:"progressToken"`
		ClientInfo      json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
		RelatedTask     json.RawMessage `json:"io.modelcontextprotocol/related-task"`
	} `json:"_meta"`
}

// clientInfo is an Implementation object: only its name is kept.
type clientInfo struct {
	Name json.RawMessage `json:"name"`
}

func readParams(out *wire.Message, method string, raw json.RawMessage) error {
	if !isObject(raw) {
		return nil
	}
	var p params
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("params: %w", err)
	}
	var errs []error
	if p.Meta != nil {
		out.ProgressToken = idText(p.Meta.ProgressToken)
		errs = append(errs,
			field(&out.Protocol, p.Meta.ProtocolVersion, "params._meta."+metaProtocolVersion),
			clientName(&out.ClientName, p.Meta.ClientInfo, "params._meta."+metaClientInfo))
	}
	errs = append(errs, field(&out.TaskID, p.TaskID, "params.taskId"))
	if p.Meta != nil && out.TaskID == "" {
		errs = append(errs, relatedTask(&out.TaskID, p.Meta.RelatedTask, "params._meta."+metaRelatedTask))
	}
	switch method {
	case mcp.MethodToolsCall:
		errs = append(errs, field(&out.Tool, p.Name, "params.name"), readArgs(out, p.Arguments))
	case mcp.MethodInitialize:
		errs = append(errs,
			field(&out.Protocol, p.ProtocolVersion, "params.protocolVersion"),
			clientName(&out.ClientName, p.ClientInfo, "params.clientInfo"))
	case mcp.MethodProgress:
		if present(p.ProgressToken) {
			out.ProgressToken = idText(p.ProgressToken)
		}
		errs = append(errs, number(&out.Progress, p.Progress, "params.progress"), number(&out.Total, p.Total, "params.total"))
	case mcp.MethodCancelled:
		out.RequestID = idText(p.RequestID)
	}
	return errors.Join(errs...)
}

// readArgs keeps a tools/call's arguments (verbatim up to
// wire.MaxArgsBytes) and their digest.
func readArgs(out *wire.Message, raw json.RawMessage) error {
	if !present(raw) {
		return nil
	}
	d, err := wire.ArgsDigest(raw)
	if err != nil {
		return fmt.Errorf("params.arguments: %w", err)
	}
	out.ArgsDigest = d
	if len(raw) <= wire.MaxArgsBytes {
		out.Args = raw
	}
	return nil
}

// field decodes a raw JSON value into dst when it is present; a value of
// the wrong type is an error naming the field.
func field[T any](dst *T, raw json.RawMessage, name string) error {
	if !present(raw) {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func number(dst **float64, raw json.RawMessage, name string) error {
	if !present(raw) {
		return nil
	}
	var f float64
	if err := field(&f, raw, name); err != nil {
		return err
	}
	*dst = &f
	return nil
}

func isObject(raw json.RawMessage) bool {
	b := bytes.TrimLeft(raw, " \t\r\n")
	return len(b) > 0 && b[0] == '{'
}

func clientName(dst *string, raw json.RawMessage, name string) error {
	var c clientInfo
	if err := field(&c, raw, name); err != nil {
		return err
	}
	return field(dst, c.Name, name+".name")
}

// idText is an id or token in canonical text form (see
// mcp.IDString); absent or null is empty.
func idText(raw json.RawMessage) string {
	if !present(raw) {
		return ""
	}
	return mcp.IDString(raw)
}

// present reports whether a field was given a value other than null.
func present(raw json.RawMessage) bool {
	return raw != nil && string(bytes.TrimSpace(raw)) != "null"
}

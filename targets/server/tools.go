package server

import (
	"encoding/json"
	"errors"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// toolList is the tools/list result.
var toolList = func() json.RawMessage {
	b, err := json.Marshal(struct {
		Tools []tools.Definition `json:"tools"`
	}{tools.Definitions()})
	if err != nil {
		panic(err) // the definitions are constants
	}
	return b
}()

// ledgerCall is c as its ledger records name it.
func (c *call) ledgerCall() tools.Call {
	return tools.Call{Tool: c.tool, OrderID: c.orderID, Session: c.sess.id, Client: c.sess.client, RequestID: c.key}
}

// emitter appends chatty's progress notifications to the call's stream
// (the standalone stream when the call is answered as JSON, which cannot
// carry them). An event is recorded once the log has numbered it, before
// any connection can read it.
func (s *Server) emitter(c *call) tools.Emit {
	token := c.token
	if len(token) == 0 || string(token) == "null" {
		token = c.id // no progressToken: the request id stands in for it
	}
	target := c.stream
	if c.kind == store.KindJSON {
		target = store.Standalone
	}
	return func(seq, total int, recordEmitted func(string, int64)) error {
		data, err := progress(token, seq, total)
		if err != nil {
			return err
		}
		_, err = c.sess.log.Append(target, data, "", func(id int64) { recordEmitted(target.String(), id) })
		if errors.Is(err, store.ErrSessionClosed) {
			return errors.Join(tools.ErrSessionGone, err)
		}
		return err
	}
}

// progress renders chatty's notification of event seq of total.
func progress(token json.RawMessage, seq, total int) ([]byte, error) {
	note, err := mcp.NewNotification(mcp.MethodProgress, mcp.ProgressParams{
		ProgressToken: token, Progress: float64(seq), Total: float64(total)})
	if err != nil {
		return nil, err
	}
	return json.Marshal(note)
}

// message renders a tool's outcome as the response to request id.
func message(id json.RawMessage, o tools.Outcome) mcp.Message {
	res, err := o.Result()
	if err != nil {
		return mcp.NewError(id, mcp.CodeInternalError, err.Error())
	}
	msg, err := mcp.NewResult(id, res)
	if err != nil {
		return mcp.NewError(id, mcp.CodeInternalError, err.Error())
	}
	return msg
}

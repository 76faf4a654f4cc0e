package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// ErrInvalidMessage is wrapped by every error of [ParseMessage] and
// [ParseBody]: the bytes are not a valid JSON-RPC 2.0 message.
var ErrInvalidMessage = errors.New("invalid JSON-RPC message")

// Message is one JSON-RPC 2.0 request, notification or response.
type Message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Error is a JSON-RPC error object.
type Error struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message) }

// IsRequest reports whether m is a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && len(m.ID) > 0 }

// IsNotification reports whether m is a notification (a method, no id).
func (m *Message) IsNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// IsResponse reports whether m is a response (an id, a result or an error).
func (m *Message) IsResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// IDString is the id in a canonical text form: a number's digits or a
// string's contents. Histories and the ledger key calls by it.
func (m *Message) IDString() string { return IDString(m.ID) }

// IDString renders a raw JSON-RPC id canonically (see [Message.IDString]).
func IDString(id json.RawMessage) string {
	var s string
	if err := json.Unmarshal(id, &s); err == nil {
		return s
	}
	return string(bytes.TrimSpace(id))
}

// NewRequest builds a request with an integer id.
func NewRequest(id int64, method string, params any) (Message, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return Message{}, err
	}
	return Message{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}, nil
}

// NewNotification builds a notification.
func NewNotification(method string, params any) (Message, error) {
	raw, err := marshalParams(params)
	if err != nil {
		return Message{}, err
	}
	return Message{JSONRPC: "2.0", Method: method, Params: raw}, nil
}

// NewResult builds a successful response to the request with the given id.
func NewResult(id json.RawMessage, result any) (Message, error) {
	raw, err := json.Marshal(result)
	if err != nil {
		return Message{}, fmt.Errorf("marshal result: %w", err)
	}
	return Message{JSONRPC: "2.0", ID: id, Result: raw}, nil
}

// NewError builds an error response. A nil id is sent as JSON null, as the
// specification requires when the request id could not be read.
func NewError(id json.RawMessage, code int, msg string) Message {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return Message{JSONRPC: "2.0", ID: id, Error: &Error{Code: code, Message: msg}}
}

func marshalParams(params any) (json.RawMessage, error) {
	if params == nil {
		return nil, nil
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("marshal params: %w", err)
	}
	return raw, nil
}

// ParseMessage decodes and validates a single JSON-RPC 2.0 message.
func ParseMessage(b []byte) (Message, error) {
	var m Message
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if dec.More() {
		return Message{}, fmt.Errorf("%w: trailing data after the message", ErrInvalidMessage)
	}
	return m, m.validate()
}

// CallID returns the id of body when it is a single tools/call request,
// rendered as [IDString] does, and "" otherwise. It is how a proxy or an
// observer that does not run the protocol tells which call a POST carries.
func CallID(body []byte) string {
	m, err := ParseMessage(body)
	if err != nil || !m.IsRequest() || m.Method != MethodToolsCall {
		return ""
	}
	return m.IDString()
}

// ParseBody decodes a POST body: one message, or (batch=true) a JSON array
// of messages as protocol 2025-03-26 allows.
func ParseBody(b []byte) (msgs []Message, batch bool, err error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		m, err := ParseMessage(b)
		if err != nil {
			return nil, false, err
		}
		return []Message{m}, false, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(b, &raws); err != nil {
		return nil, true, fmt.Errorf("%w: %v", ErrInvalidMessage, err)
	}
	if len(raws) == 0 {
		return nil, true, fmt.Errorf("%w: empty batch", ErrInvalidMessage)
	}
	for i, raw := range raws {
		m, err := ParseMessage(raw)
		if err != nil {
			return nil, true, fmt.Errorf("batch element %d: %w", i, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, true, nil
}

func (m *Message) validate() error {
	if m.JSONRPC != "2.0" {
		return fmt.Errorf("%w: jsonrpc must be \"2.0\"", ErrInvalidMessage)
	}
	if len(m.ID) > 0 {
		if err := validID(m.ID); err != nil {
			return err
		}
	}
	switch {
	case m.Method != "":
		if len(m.Result) > 0 || m.Error != nil {
			return fmt.Errorf("%w: a request carries no result or error", ErrInvalidMessage)
		}
	case len(m.ID) == 0:
		return fmt.Errorf("%w: neither a method nor an id", ErrInvalidMessage)
	case (len(m.Result) > 0) == (m.Error != nil):
		return fmt.Errorf("%w: a response carries exactly one of result and error", ErrInvalidMessage)
	}
	return nil
}

// validID accepts the id forms MCP allows: a string or an integer.
func validID(id json.RawMessage) error {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return nil
	}
	if _, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64); err == nil {
		return nil
	}
	return fmt.Errorf("%w: id must be a string or an integer", ErrInvalidMessage)
}

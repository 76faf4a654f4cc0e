package mcp

import "encoding/json"

// Tool names every target exposes.
const (
	ToolCharge = "charge"
	ToolChatty = "chatty"
)

// ChargeArgs are the arguments of the charge tool. It runs for DurationMS
// and then records exactly one charge, unless IdempotencyKey names a charge
// already recorded.
type ChargeArgs struct {
	OrderID        string `json:"order_id"`
	AmountCents    int64  `json:"amount_cents"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	DurationMS     int64  `json:"duration_ms,omitempty"`
}

// ChattyArgs are the arguments of the chatty tool: it emits Events numbered
// progress notifications (1..Events), one every IntervalMS.
type ChattyArgs struct {
	Events     int   `json:"events"`
	IntervalMS int64 `json:"interval_ms,omitempty"`
}

// CallParams are the params of tools/call.
type CallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Task asks for the call to run as a task (2025-11-25).
	Task *TaskParams  `json:"task,omitempty"`
	Meta *RequestMeta `json:"_meta,omitempty"`
}

// RequestMeta carries the progress token of a request and, at 2026-07-28,
// the per-request protocol version, client identity and capabilities.
type RequestMeta struct {
	ProgressToken      any             `json:"progressToken,omitempty"`
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion,omitempty"`
	ClientInfo         *Implementation `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
}

// ProgressParams are the params of notifications/progress. Progress is the
// sequence number of the notification within its call (1, 2, ...).
type ProgressParams struct {
	ProgressToken any     `json:"progressToken"`
	Progress      float64 `json:"progress"`
	Total         float64 `json:"total,omitempty"`
	Message       string  `json:"message,omitempty"`
}

// Content is one content block of a tool result.
type Content struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
}

// CallResult is the result of tools/call.
type CallResult struct {
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
}

// Implementation names a client or server in initialize.
type Implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// InitializeParams are the params of initialize. ClientInfo.Name is the
// logical client id the ledger groups sessions by.
type InitializeParams struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ClientInfo      Implementation  `json:"clientInfo"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ProtocolVersion string          `json:"protocolVersion"`
	Capabilities    json.RawMessage `json:"capabilities"`
	ServerInfo      Implementation  `json:"serverInfo"`
}

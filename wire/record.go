package wire

import (
	"encoding/json"
	"slices"
)

// File is the name of the wire record in a result folder.
const File = "wire.jsonl"

// Edge names where a record was observed.
type Edge string

// The edges.
const (
	// EdgeClient is between the client and the fault proxy: what the client
	// sent, and what was delivered to it.
	EdgeClient Edge = "client"
	// EdgeServer is between the fault proxy and the server: what reached the
	// server, and what it sent.
	EdgeServer Edge = "server"
)

// Edges lists both edges, client first.
var Edges = []Edge{EdgeClient, EdgeServer}

// Kind names a wire record.
type Kind string

// The record kinds (see the package documentation for their fields).
const (
	KindOpen      Kind = "open"
	KindRequest   Kind = "request"
	KindResponse  Kind = "response"
	KindEvent     Kind = "event"
	KindComment   Kind = "comment"
	KindBodyEnd   Kind = "body_end"
	KindClose     Kind = "close"
	KindMalformed Kind = "malformed"
)

// Kinds lists every record kind.
var Kinds = []Kind{KindOpen, KindRequest, KindResponse, KindEvent, KindComment, KindBodyEnd, KindClose, KindMalformed}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Side names one of the two peers of a connection on an edge: the one toward
// the MCP client (the client itself on the client edge, the fault proxy on
// the server edge) or the one toward the MCP server (the fault proxy on the
// client edge, the server itself on the server edge).
type Side string

// The sides.
const (
	SideClient Side = "client"
	SideServer Side = "server"
)

// End is how a connection ended, as the side that ended it first did it.
type End string

// The ends of a connection.
const (
	EndFIN      End = "fin"      // an orderly close (EOF on read)
	EndRST      End = "rst"      // a reset (ECONNRESET on read or write)
	EndTimeout  End = "timeout"  // a read or write timed out (ETIMEDOUT)
	EndError    End = "error"    // any other error; detail says which
	EndObserver End = "observer" // the observer itself closed it (it was stopping)
)

// MaxArgsBytes bounds the tools/call arguments a record keeps verbatim;
// larger arguments keep only their digest.
const MaxArgsBytes = 16 << 10

// MaxErrorBody bounds the error body a response record keeps.
const MaxErrorBody = 4 << 10

// Record is one line of wire.jsonl. Fields a kind does not use are zero and
// omitted.
type Record struct {
	N        int64  `json:"n"`
	TUS      int64  `json:"t_us"`
	Edge     Edge   `json:"edge"`
	Conn     int64  `json:"conn"`
	Kind     Kind   `json:"kind"`
	Exchange int64  `json:"x,omitempty"`
	Peer     string `json:"peer,omitempty"`

	// Request and response.
	Method    string    `json:"method,omitempty"` // the HTTP method of a request
	Path      string    `json:"path,omitempty"`
	Status    int       `json:"status,omitempty"`
	Header    *Header   `json:"header,omitempty"`
	Size      int64     `json:"size,omitempty"` // bytes of the body, event data or comment
	Messages  []Message `json:"messages,omitempty"`
	ErrorBody string    `json:"error_body,omitempty"`

	// Event.
	EventID   string `json:"event_id,omitempty"`
	EventType string `json:"event_type,omitempty"`
	RetryMS   int64  `json:"retry_ms,omitempty"`
	Priming   bool   `json:"priming,omitempty"` // an id and no data: a cursor, no message

	// Close.
	End       End    `json:"end,omitempty"`
	By        Side   `json:"by,omitempty"`
	BytesUp   int64  `json:"bytes_up,omitempty"`   // client to server
	BytesDown int64  `json:"bytes_down,omitempty"` // server to client
	Detail    string `json:"detail,omitempty"`

	// Problem says why a body, event or byte run could not be read.
	Problem string `json:"problem,omitempty"`

	_ struct{} // keyed literals only: the record grows
}

// Header holds the headers of a request or response that MCP gives meaning
// to, each as its first value.
type Header struct {
	SessionID       string `json:"mcp_session_id,omitempty"`
	ProtocolVersion string `json:"mcp_protocol_version,omitempty"`
	LastEventID     string `json:"last_event_id,omitempty"`
	MCPMethod       string `json:"mcp_method,omitempty"`
	MCPName         string `json:"mcp_name,omitempty"`
	Origin          string `json:"origin,omitempty"`
	Accept          string `json:"accept,omitempty"`
	ContentType     string `json:"content_type,omitempty"`
}

// Message is what a record keeps of one JSON-RPC message.
type Message struct {
	// ID is the id in canonical text form; empty for a notification (and
	// for an error response to a request whose id was unreadable: null).
	ID     string `json:"id,omitempty"`
	Method string `json:"method,omitempty"`
	// Response is set for a response (a result or an error).
	Response bool `json:"response,omitempty"`

	// Tool and Args are the params.name and params.arguments of a
	// tools/call (Args verbatim, and only up to MaxArgsBytes); ArgsDigest is
	// the SHA-256 (hex) of the arguments in canonical form ([ArgsDigest]),
	// set whenever they are, so a retry with the same arguments is known
	// even when Args was too large to keep, and whatever the key order or
	// white space of each.
	Tool       string          `json:"tool,omitempty"`
	Args       json.RawMessage `json:"args,omitempty"`
	ArgsDigest string          `json:"args_digest,omitempty"`

	// ClientName and Protocol come from initialize (params.clientInfo.name,
	// params or result protocolVersion), from server/discover, or from the
	// per-request _meta of 2026-07-28 (io.modelcontextprotocol/clientInfo,
	// io.modelcontextprotocol/protocolVersion).
	ClientName string `json:"client_name,omitempty"`
	Protocol   string `json:"protocol,omitempty"`

	// ProgressToken, Progress and Total are those of notifications/progress
	// (the token in canonical text form), and ProgressToken also the
	// _meta.progressToken of a request.
	ProgressToken string   `json:"progress_token,omitempty"`
	Progress      *float64 `json:"progress,omitempty"`
	Total         *float64 `json:"total,omitempty"`

	// RequestID is the params.requestId of notifications/cancelled.
	RequestID string `json:"request_id,omitempty"`

	// IsError is set for a JSON-RPC error, and for a tools/call result with
	// isError true; ErrorCode and ErrorMessage are a JSON-RPC error's.
	IsError      bool   `json:"is_error,omitempty"`
	ErrorCode    int    `json:"error_code,omitempty"`
	ErrorMessage string `json:"error_message,omitempty"`

	// ResultType is a 2026-07-28 result's resultType ("complete",
	// "input_required", "task"); TaskID and TaskStatus name the task a
	// request or result is about (params.taskId, result.taskId or
	// result.task.taskId, and status), or TaskID the task a message relates
	// to (the taskId of _meta io.modelcontextprotocol/related-task in its
	// params or result).
	ResultType string `json:"result_type,omitempty"`
	TaskID     string `json:"task_id,omitempty"`
	TaskStatus string `json:"task_status,omitempty"`

	// Problem says why the bytes are not a JSON-RPC message.
	Problem string `json:"problem,omitempty"`

	_ struct{} // keyed literals only: the message grows
}

// IsRequest reports whether m is a request (a method and an id).
func (m *Message) IsRequest() bool { return m.Method != "" && m.ID != "" }

// IsNotification reports whether m is a notification (a method, no id).
func (m *Message) IsNotification() bool { return m.Method != "" && m.ID == "" }

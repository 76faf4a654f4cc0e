package mcp

import (
	"encoding/base64"
	"encoding/json"
	"strings"
)

// Version20260728 is the stateless revision: no sessions, no initialize,
// no GET stream and no resumption; every request carries its version and
// the client's identity in _meta and mirrors its method and name into
// headers; closing a response stream cancels the request.
const Version20260728 = "2026-07-28"

// ModernVersion reports whether v is a revision without sessions.
func ModernVersion(v string) bool { return v == Version20260728 }

// AllVersions lists every version a dual-era server supports, newest first,
// as UnsupportedProtocolVersionError and server/discover list them.
func AllVersions() []string {
	out := []string{Version20260728}
	for i := len(Versions) - 1; i >= 0; i-- {
		out = append(out, Versions[i])
	}
	return out
}

// Request metadata headers of 2026-07-28.
const (
	HeaderMethod = "Mcp-Method"
	HeaderName   = "Mcp-Name"
)

// Per-request _meta keys of 2026-07-28.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// Error codes of 2026-07-28.
const (
	CodeHeaderMismatch             = -32020
	CodeMissingClientCapability    = -32021
	CodeUnsupportedProtocolVersion = -32022
)

// Result types: a final result, and (the tasks extension) a task handle.
const (
	ResultComplete = "complete"
	ResultTask     = "task"
)

// The tasks extension (io.modelcontextprotocol/tasks) at 2026-07-28.
const (
	ExtensionTasks    = "io.modelcontextprotocol/tasks"
	MethodTasksGet    = "tasks/get"
	MethodTasksCancel = "tasks/cancel"
	MethodTasksUpdate = "tasks/update"
)

// UnsupportedVersionData is the data of an UnsupportedProtocolVersionError.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// ModernMeta is the per-request _meta of 2026-07-28, as far as chaosrun
// reads it.
type ModernMeta struct {
	ProtocolVersion    string          `json:"io.modelcontextprotocol/protocolVersion,omitempty"`
	ClientInfo         *Implementation `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	ClientCapabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
	ProgressToken      json.RawMessage `json:"progressToken,omitempty"`
}

// RequestFields are the members of a request's params that 2026-07-28
// mirrors into headers or reads per request.
type RequestFields struct {
	Name   string     `json:"name"`
	URI    string     `json:"uri"`
	TaskID string     `json:"taskId"`
	Meta   ModernMeta `json:"_meta"`
}

// ReadRequestFields reads params leniently: absent or malformed params give
// zero fields and ok false.
func ReadRequestFields(params json.RawMessage) (RequestFields, bool) {
	var f RequestFields
	if len(params) == 0 {
		return f, false
	}
	return f, json.Unmarshal(params, &f) == nil
}

// NamedMethod reports whether method must carry Mcp-Name, and which params
// member it mirrors ("name", "uri", or for the tasks extension "taskId").
func NamedMethod(method string) (member string, ok bool) {
	switch method {
	case MethodToolsCall, "prompts/get":
		return "name", true
	case "resources/read":
		return "uri", true
	case MethodTasksGet, MethodTasksCancel, MethodTasksUpdate:
		return "taskId", true
	}
	return "", false
}

// Member is the params member NamedMethod names.
func (f RequestFields) Member(member string) string {
	switch member {
	case "uri":
		return f.URI
	case "taskId":
		return f.TaskID
	}
	return f.Name
}

const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

// DecodeHeaderValue reads an Mcp-Name or Mcp-Param-* value: plain visible
// ASCII (space and tab allowed inside), or the Base64 sentinel
// =?base64?…?= around the UTF-8 bytes. ok is false for a value with other
// bytes or a sentinel that does not decode.
func DecodeHeaderValue(v string) (string, bool) {
	if strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix) && len(v) >= len(base64Prefix)+len(base64Suffix) {
		b, err := base64.StdEncoding.DecodeString(v[len(base64Prefix) : len(v)-len(base64Suffix)])
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < 0x20 || c > 0x7e) && c != '\t' {
			return "", false
		}
	}
	return v, true
}

// EncodeHeaderValue is the inverse of [DecodeHeaderValue]: v as is when it
// is plain ASCII without leading or trailing white space and does not look
// like the sentinel, else the sentinel form.
func EncodeHeaderValue(v string) string {
	plain := v == strings.TrimSpace(v) && !(strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix))
	for i := 0; plain && i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			plain = false
		}
	}
	if plain {
		return v
	}
	return base64Prefix + base64.StdEncoding.EncodeToString([]byte(v)) + base64Suffix
}

// DiscoverResult is the result of server/discover.
type DiscoverResult struct {
	ResultType        string          `json:"resultType"`
	SupportedVersions []string        `json:"supportedVersions"`
	Capabilities      json.RawMessage `json:"capabilities"`
	TTLMs             int             `json:"ttlMs"`
	Meta              map[string]any  `json:"_meta,omitempty"`
}

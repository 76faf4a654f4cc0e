package server

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// modernRequest reports whether a POST is served statelessly at
// 2026-07-28: its MCP-Protocol-Version says so, or its message carries the
// per-request _meta protocol version, or it is server/discover, or it
// names a version this server does not know without a session to belong
// to (so the answer is the modern UnsupportedProtocolVersionError, which a
// dual-era client reads as "modern server, retry with a listed version").
func modernRequest(h http.Header, msgs []mcp.Message) bool {
	if modernHeader(h) {
		return true
	}
	for _, m := range msgs {
		if m.Method == mcp.MethodDiscover {
			return true
		}
		if f, ok := mcp.ReadRequestFields(m.Params); ok && f.Meta.ProtocolVersion != "" {
			return true
		}
	}
	_, known := headerVersion(h)
	return !known && len(h.Values(mcp.HeaderSessionID)) == 0
}

// modernHeader reports whether the MCP-Protocol-Version header names
// 2026-07-28.
func modernHeader(h http.Header) bool {
	hv := h.Values(mcp.HeaderProtocolVersion)
	return len(hv) == 1 && mcp.ModernVersion(hv[0])
}

// modernReject is a request refused before it runs: the HTTP status and
// the JSON-RPC error.
type modernReject struct {
	status int
	err    mcp.Error
}

func mismatch(format string, args ...any) *modernReject {
	return &modernReject{status: http.StatusBadRequest, err: mcp.Error{Code: mcp.CodeHeaderMismatch, Message: "Header mismatch: " + fmt.Sprintf(format, args...)}}
}

// checkModern validates a 2026-07-28 request's headers against its body,
// in order: MCP-Protocol-Version present (-32020), a version this server
// serves statelessly (-32022 listing every supported version), equal to
// _meta's (-32020), Mcp-Method present and equal to the method (-32020),
// and for tools/call, prompts/get and resources/read Mcp-Name present,
// decodable and equal to params.name or params.uri (-32020).
func checkModern(h http.Header, m mcp.Message, f mcp.RequestFields) *modernReject {
	hv := h.Values(mcp.HeaderProtocolVersion)
	if len(hv) != 1 {
		return mismatch("exactly one MCP-Protocol-Version header is required")
	}
	if !mcp.ModernVersion(hv[0]) {
		data, _ := json.Marshal(mcp.UnsupportedVersionData{Supported: mcp.AllVersions(), Requested: hv[0]})
		return &modernReject{status: http.StatusBadRequest, err: mcp.Error{
			Code: mcp.CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version", Data: data}}
	}
	if f.Meta.ProtocolVersion != hv[0] {
		return mismatch("MCP-Protocol-Version header value %q does not match _meta %s value %q", hv[0], mcp.MetaProtocolVersion, f.Meta.ProtocolVersion)
	}
	mv := h.Values(mcp.HeaderMethod)
	if len(mv) != 1 || mv[0] != m.Method {
		return mismatch("Mcp-Method header %q does not match body method %q", mv, m.Method)
	}
	member, named := mcp.NamedMethod(m.Method)
	if !named {
		return nil
	}
	want := f.Member(member)
	nv := h.Values(mcp.HeaderName)
	if len(nv) != 1 {
		return mismatch("exactly one Mcp-Name header is required for %s", m.Method)
	}
	got, ok := mcp.DecodeHeaderValue(nv[0])
	if !ok {
		return mismatch("Mcp-Name header value is not a valid header value")
	}
	if got != want {
		return mismatch("Mcp-Name header value %q does not match body value %q", got, want)
	}
	return nil
}

// serveModern serves one POST at 2026-07-28: no session (Mcp-Session-Id
// and Last-Event-ID are ignored, none is minted), one message per POST.
func (s *Server) serveModern(w http.ResponseWriter, r *http.Request, sseOK bool, msgs []mcp.Message, batch bool) {
	if batch || len(msgs) != 1 {
		writeRPCError(w, http.StatusBadRequest, nil, mcp.CodeInvalidRequest, "a 2026-07-28 POST carries exactly one JSON-RPC message")
		return
	}
	m := msgs[0]
	switch {
	case m.IsResponse():
		writeRPCError(w, http.StatusBadRequest, nil, mcp.CodeInvalidRequest, "clients send no JSON-RPC responses at 2026-07-28")
		return
	case m.IsNotification():
		w.WriteHeader(http.StatusAccepted)
		return
	}
	f, _ := mcp.ReadRequestFields(m.Params)
	if rej := checkModern(r.Header, m, f); rej != nil {
		writeJSON(w, rej.status, mcp.Message{JSONRPC: "2.0", ID: m.ID, Error: &rej.err})
		return
	}
	switch m.Method {
	case mcp.MethodDiscover:
		caps := json.RawMessage(`{"tools":{}}`)
		if s.cfg.Tasks == TasksExtension {
			caps = json.RawMessage(`{"tools":{},"extensions":{"` + mcp.ExtensionTasks + `":{}}}`)
		}
		writeModernResult(w, m.ID, mcp.DiscoverResult{
			ResultType: mcp.ResultComplete, SupportedVersions: mcp.AllVersions(),
			Capabilities: caps, Meta: map[string]any{mcp.MetaServerInfo: serverInfo},
		})
	case mcp.MethodTasksGet, mcp.MethodTasksCancel, mcp.MethodTasksUpdate:
		s.serveTaskMethod(w, m, f)
	case mcp.MethodPing:
		writeModernResult(w, m.ID, struct {
			ResultType string `json:"resultType"`
		}{mcp.ResultComplete})
	case mcp.MethodToolsList:
		writeModernResult(w, m.ID, modernToolList)
	case mcp.MethodToolsCall:
		s.serveModernCall(w, r, sseOK, m, f)
	default:
		writeRPCError(w, http.StatusNotFound, m.ID, mcp.CodeMethodNotFound, "method not found: "+m.Method)
	}
}

// modernToolList is the tools/list result at 2026-07-28.
var modernToolList = func() json.RawMessage {
	var l map[string]any
	if err := json.Unmarshal(toolList, &l); err != nil {
		panic(err) // toolList is built from constants
	}
	l["resultType"] = mcp.ResultComplete
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return b
}()

func writeModernResult(w http.ResponseWriter, id json.RawMessage, result any) {
	msg, err := mcp.NewResult(id, result)
	if err != nil {
		msg = mcp.NewError(id, mcp.CodeInternalError, err.Error())
	}
	writeJSON(w, http.StatusOK, msg)
}

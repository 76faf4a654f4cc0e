package server

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// maxBodyBytes bounds a POST body; larger bodies get 413.
const maxBodyBytes = 4 << 20

// Error codes of the JSON bodies of 4xx and 5xx answers.
const (
	errMethodNotAllowed     = "method_not_allowed"
	errForbiddenOrigin      = "forbidden_origin"
	errUnsupportedMediaType = "unsupported_media_type"
	errNotAcceptable        = "not_acceptable"
	errBodyTooLarge         = "body_too_large"
	errBadRequest           = "bad_request"
	errMissingSession       = "missing_session_id"
	errSessionNotFound      = "session_not_found"
	errBadProtocolVersion   = "unsupported_protocol_version"
	errVersionMismatch      = "protocol_version_mismatch"
	errBatchNotSupported    = "batch_not_supported"
	errInitializeSession    = "initialize_with_session_id"
	errInitializeBatch      = "initialize_in_batch"
	errBadLastEventID       = "bad_last_event_id"
	errStreamAttached       = "stream_attached"
	errResumeWindow         = "resume_window_exceeded"
	errShuttingDown         = "shutting_down"
	errInternal             = "internal"
	errStoreUnreachable     = "store_unreachable"
)

type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// resumeGone is the 410 body. Field order is the wire order.
type resumeGone struct {
	Error            string `json:"error"`
	LastEventID      int64  `json:"last_event_id"`
	OldestRetainedID int64  `json:"oldest_retained_id"`
	HeadEventID      int64  `json:"head_event_id"`
	// ResumeEventID is the earliest honourable cursor of the stream (its
	// newest evicted id): resuming there loses only (last_event_id,
	// resume_event_id] and still delivers every retained event, a result
	// written during the disconnect included. Resuming at head_event_id
	// would skip that result when it is the stream's newest event.
	ResumeEventID int64 `json:"resume_event_id"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"internal"}`)
	}
	w.Header().Set("Content-Type", mcp.ContentTypeJSON)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: code, Message: msg})
}

// writeRPCError answers with a JSON-RPC error object as the body, as the
// specification asks for messages the server cannot accept.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	writeJSON(w, status, mcp.NewError(id, code, msg))
}

// accepts reports which of application/json and text/event-stream the
// Accept header values allow. No Accept header allows both, as HTTP says; a
// media range with q=0 allows nothing.
func accepts(values []string) (jsonOK, sseOK bool) {
	if len(values) == 0 {
		return true, true
	}
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			media, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			if q, err := strconv.ParseFloat(params["q"], 64); err == nil && q <= 0 {
				continue
			}
			switch media {
			case mcp.ContentTypeJSON, "application/*":
				jsonOK = true
			case mcp.ContentTypeSSE, "text/*":
				sseOK = true
			case "*/*":
				jsonOK, sseOK = true, true
			}
		}
	}
	return jsonOK, sseOK
}

func isJSONContent(contentType string) bool {
	media, _, err := mime.ParseMediaType(contentType)
	return err == nil && media == mcp.ContentTypeJSON
}

// headerVersion returns the MCP-Protocol-Version header. ok is false when
// the header is present but is not exactly one supported version.
func headerVersion(h http.Header) (v string, ok bool) {
	vals := h.Values(mcp.HeaderProtocolVersion)
	switch {
	case len(vals) == 0:
		return "", true
	case len(vals) == 1 && mcp.SupportedVersion(vals[0]):
		return vals[0], true
	}
	return "", false
}

// parseEventID parses a Last-Event-ID: exactly one header of decimal digits.
func parseEventID(vals []string) (int64, bool) {
	if len(vals) != 1 {
		return 0, false
	}
	v := vals[0]
	if v == "" || len(v) > 18 || strings.IndexFunc(v, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil
}

// allowedOrigin applies the DNS-rebinding defence every revision asks for
// (MUST answer 403 to an invalid Origin): a request without Origin is
// allowed, and so is one whose origin is http or https on a loopback host
// (localhost, 127.0.0.0/8, ::1) or matches an entry of allowed. Schemes and
// hosts compare case-insensitively, ports exactly (an absent port is the
// scheme's default); the entry "*" allows every origin. "null" and
// anything unparsable are refused.
func allowedOrigin(allowed []string, h http.Header) bool {
	origins := h.Values("Origin")
	switch len(origins) {
	case 0:
		return true
	case 1:
	default:
		return false
	}
	o, ok := parseOrigin(origins[0])
	if !ok {
		return slices.Contains(allowed, "*")
	}
	if o.loopback() {
		return true
	}
	for _, a := range allowed {
		if a == "*" {
			return true
		}
		if ao, ok := parseOrigin(a); ok && ao == o {
			return true
		}
	}
	return false
}

// origin is a parsed Origin: lower-case scheme and host, explicit port.
type origin struct{ scheme, host, port string }

func parseOrigin(v string) (origin, bool) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return origin{}, false
	}
	o := origin{scheme: strings.ToLower(u.Scheme), host: strings.ToLower(u.Hostname()), port: u.Port()}
	if o.port == "" {
		switch o.scheme {
		case "http":
			o.port = "80"
		case "https":
			o.port = "443"
		}
	}
	return o, o.host != ""
}

func (o origin) loopback() bool {
	if o.scheme != "http" && o.scheme != "https" {
		return false
	}
	if o.host == "localhost" || strings.HasSuffix(o.host, ".localhost") {
		return true
	}
	ip, err := netip.ParseAddr(o.host)
	return err == nil && ip.IsLoopback()
}

// writeSSEHeaders writes the header of an SSE response without flushing it:
// pump flushes it together with the first events, so the status line never
// reaches a client without the priming event that gives it a cursor.
func writeSSEHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", mcp.ContentTypeSSE)
	h.Set("Cache-Control", "no-cache, no-transform")
	h.Set("X-Accel-Buffering", "no") // keep reverse proxies from buffering the stream
	w.WriteHeader(http.StatusOK)
}

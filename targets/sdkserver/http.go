package sdkserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// RequestIDHeader carries the JSON-RPC id of a tools/call from [Front] to
// the tool, which reads it from the request headers the SDK hands over.
// A value sent by a client is removed first.
const RequestIDHeader = "X-Chaosrun-Request-Id"

// maxPeekBytes bounds how much of a POST body [Front] reads to find the
// request id. A larger body is passed on untouched and unlabelled.
const maxPeekBytes = 4 << 20

// StreamHeader carries, from [Front] to the tool, the label under which
// the host watches the connection of a 2026-07-28 tools/call (see
// [Host.Call]). A value sent by a client is removed first.
const StreamHeader = "X-Chaosrun-Stream"

// Front wraps an SDK's MCP handler. It labels a POST carrying one
// tools/call request with [RequestIDHeader] (and, at 2026-07-28, where the
// POST's response is the call's only stream, with [StreamHeader] for the
// host to watch it close), and notes a DELETE of an open session so that
// its session_closed record says "deleted".
func Front(next http.Handler, host *Host) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(RequestIDHeader)
		r.Header.Del(StreamHeader)
		switch r.Method {
		case http.MethodPost:
			if id := peekCallID(r); id != "" {
				r.Header.Set(RequestIDHeader, id)
				if mcp.ModernVersion(r.Header.Get(mcp.HeaderProtocolVersion)) {
					label, forget := host.watchStream(r.Context().Done())
					defer forget()
					r.Header.Set(StreamHeader, label)
				}
			}
		case http.MethodDelete:
			if sid := r.Header.Get(mcp.HeaderSessionID); host.HasSession(sid) {
				host.NoteClosing(sid, "deleted")
			}
		}
		next.ServeHTTP(w, r)
	})
}

// peekCallID reads the start of r's body, puts it back, and returns the id
// of the tools/call request it holds, or "".
func peekCallID(r *http.Request) string {
	if r.Body == nil {
		return ""
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxPeekBytes+1))
	r.Body = readCloser{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > maxPeekBytes {
		return ""
	}
	return mcp.CallID(head)
}

type readCloser struct {
	io.Reader
	io.Closer
}

// ErrUnknownSession is returned by a control action for a session the
// server does not hold.
var ErrUnknownSession = errors.New("unknown session")

// Control describes the control endpoints of an SDK server. A nil action
// is unsupported: its endpoint answers 501 with the matching reason.
type Control struct {
	Target  string // "go-sdk", "mcp-go"
	Version string // the pinned SDK version
	Host    *Host
	// Expire drops the session now, so that later requests for it get the
	// SDK's answer to an unknown session.
	Expire            func(session string) error
	ExpireUnsupported string
	// Terminate sends the session a close event.
	Terminate            func(session string) error
	TerminateUnsupported string
}

// Status is the body of /control/status.
type Status struct {
	Target        string `json:"target"`
	SDKVersion    string `json:"sdk_version"`
	InflightCalls int64  `json:"inflight_calls"`
	Sessions      int    `json:"sessions"`
}

// errorBody is the reference server's error answer.
type errorBody struct {
	Error   string `json:"error"`
	Message string `json:"message,omitempty"`
}

// sessionsBody answers an action: the sessions it acted on.
type sessionsBody struct {
	Sessions []string `json:"sessions"`
}

// MountControl serves the control endpoints on mux with the reference
// server's paths and answers: GET /control/healthz ({"ok":true}), GET
// /control/status, and POST /control/expire and /control/terminate, which
// act on the session named by ?session=ID (404 session_not_found if there
// is none) or on every open session, and answer {"sessions":[ids acted
// on]}. An unsupported action answers 501 {"error":"unsupported",
// "message":reason}.
func MountControl(mux *http.ServeMux, c Control) {
	mux.HandleFunc("GET /control/healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true, "target": c.Target})
	})
	mux.HandleFunc("GET /control/status", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, Status{
			Target: c.Target, SDKVersion: c.Version,
			InflightCalls: c.Host.Inflight(), Sessions: c.Host.Sessions(),
		})
	})
	mux.HandleFunc("POST /control/expire", action(c.Host, c.Expire, c.ExpireUnsupported))
	mux.HandleFunc("POST /control/terminate", action(c.Host, c.Terminate, c.TerminateUnsupported))
}

func action(host *Host, do func(string) error, unsupported string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if do == nil {
			writeJSON(w, http.StatusNotImplemented, errorBody{Error: "unsupported", Message: unsupported})
			return
		}
		q := r.URL.Query()
		targets, named := host.openSessions(), q.Has("session")
		if named {
			targets = []string{q.Get("session")}
		}
		done := []string{}
		for _, id := range targets {
			err := do(id)
			switch {
			case err == nil:
				done = append(done, id)
			case !errors.Is(err, ErrUnknownSession):
				writeJSON(w, http.StatusInternalServerError, errorBody{Error: "internal", Message: err.Error()})
				return
			case named:
				writeJSON(w, http.StatusNotFound, errorBody{Error: "session_not_found", Message: "no such session"})
				return
			}
			// A session that ended between listing and acting is skipped.
		}
		writeJSON(w, http.StatusOK, sessionsBody{Sessions: done})
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", mcp.ContentTypeJSON)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

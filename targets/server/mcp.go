package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// routes builds the handler: /mcp, /control/..., behind the Origin check.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.serveMCP)
	mux.HandleFunc("GET /control/healthz", s.serveHealthz)
	mux.HandleFunc("GET /control/status", s.serveStatus)
	mux.HandleFunc("POST /control/expire", s.serveExpire)
	mux.HandleFunc("POST /control/terminate", s.serveTerminate)
	mux.HandleFunc("POST /control/drop_tasks", s.serveDropTasks)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allowedOrigin(s.cfg.AllowedOrigins, r.Header) {
			writeError(w, http.StatusForbidden, errForbiddenOrigin, "Origin is not allowed")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// serveMCP is the Streamable HTTP endpoint. Checks run in a fixed order,
// so a request with several faults gets the first one's answer: Origin
// (403), method (405), shutdown (503), media types and body (415, 406, 413,
// 400), MCP-Protocol-Version validity (400), session id (400 missing, 404
// unknown), version mismatch and batch rules (400), then resumption (400,
// 409, 410).
func (s *Server) serveMCP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost, http.MethodGet, http.MethodDelete:
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		writeError(w, http.StatusMethodNotAllowed, errMethodNotAllowed, "use POST, GET or DELETE")
		return
	}
	if r.Method != http.MethodPost && modernHeader(r.Header) {
		// 2026-07-28 has no GET stream and no session to delete.
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, errMethodNotAllowed, "2026-07-28 has no GET stream and no sessions: use POST")
		return
	}
	if s.stopped() {
		writeError(w, http.StatusServiceUnavailable, errShuttingDown, "the server is shutting down")
		return
	}
	switch r.Method {
	case http.MethodPost:
		s.servePOST(w, r)
	case http.MethodGet:
		s.serveGET(w, r)
	default:
		s.serveDELETE(w, r)
	}
}

// enter checks the session id and the protocol version header of a request
// on an existing session and counts the request in progress. It answers
// the request itself and returns nil when the request cannot go on; else
// the caller must call s.leave.
func (s *Server) enter(w http.ResponseWriter, r *http.Request) *session {
	hv, ok := headerVersion(r.Header)
	if !ok {
		writeError(w, http.StatusBadRequest, errBadProtocolVersion, "MCP-Protocol-Version must be one of "+versionList())
		return nil
	}
	ids := r.Header.Values(mcp.HeaderSessionID)
	if len(ids) != 1 || ids[0] == "" {
		writeError(w, http.StatusBadRequest, errMissingSession, "Mcp-Session-Id is required")
		return nil
	}
	sess, err := s.lookup(ids[0])
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, errStoreUnreachable, "the shared session store cannot be read: "+err.Error())
		return nil
	}
	if sess == nil || !sess.begin() {
		writeError(w, http.StatusNotFound, errSessionNotFound, "no such session")
		return nil
	}
	// An absent header means the negotiated version: the session is the
	// "other way to identify the version" the specification allows for.
	if hv != "" && hv != sess.version {
		s.leave(sess)
		writeError(w, http.StatusBadRequest, errVersionMismatch, "the session negotiated "+sess.version)
		return nil
	}
	return sess
}

func versionList() string {
	b, _ := json.Marshal(mcp.Versions)
	return string(b)
}

func (s *Server) servePOST(w http.ResponseWriter, r *http.Request) {
	if !isJSONContent(r.Header.Get("Content-Type")) {
		writeError(w, http.StatusUnsupportedMediaType, errUnsupportedMediaType, "Content-Type must be application/json")
		return
	}
	jsonOK, sseOK := accepts(r.Header.Values("Accept"))
	if !jsonOK && !sseOK {
		writeError(w, http.StatusNotAcceptable, errNotAcceptable, "Accept must allow application/json or text/event-stream")
		return
	}
	kind := store.KindSSE
	if !sseOK {
		kind = store.KindJSON
	}
	msgs, batch, ok := readMessages(w, r)
	if !ok {
		return
	}
	if init := findInitialize(msgs); init != nil {
		s.initialize(w, r, kind, init, batch, len(msgs))
		return
	}
	if modernRequest(r.Header, msgs) {
		s.serveModern(w, r, sseOK, msgs, batch)
		return
	}
	sess := s.enter(w, r)
	if sess == nil {
		return
	}
	defer s.leave(sess)
	if batch && sess.version != mcp.Version20250326 {
		writeError(w, http.StatusBadRequest, errBatchNotSupported, "JSON-RPC batches are only allowed on 2025-03-26 sessions")
		return
	}
	s.dispatch(w, r, sess, kind, msgs, batch)
}

// readMessages reads and parses a POST body, answering 413 or 400 itself.
func readMessages(w http.ResponseWriter, r *http.Request) ([]mcp.Message, bool, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeError(w, http.StatusRequestEntityTooLarge, errBodyTooLarge, "the body is over 4 MiB")
		} else {
			writeError(w, http.StatusBadRequest, errBadRequest, "reading the body: "+err.Error())
		}
		return nil, false, false
	}
	msgs, batch, err := mcp.ParseBody(body)
	if err != nil {
		if json.Valid(body) {
			writeRPCError(w, http.StatusBadRequest, nil, mcp.CodeInvalidRequest, err.Error())
		} else {
			writeRPCError(w, http.StatusBadRequest, nil, mcp.CodeParseError, "parse error: "+err.Error())
		}
		return nil, false, false
	}
	return msgs, batch, true
}

func findInitialize(msgs []mcp.Message) *mcp.Message {
	for i := range msgs {
		if msgs[i].IsRequest() && msgs[i].Method == mcp.MethodInitialize {
			return &msgs[i]
		}
	}
	return nil
}

func (s *Server) serveDELETE(w http.ResponseWriter, r *http.Request) {
	sess := s.enter(w, r)
	if sess == nil {
		return
	}
	defer s.leave(sess)
	s.endSession(sess, reasonDeleted)
	w.WriteHeader(http.StatusNoContent)
}

package mcpgo

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/sdkserver"
	"github.com/chaosrun/chaosrun/targets/tools"
	mcpwire "github.com/chaosrun/chaosrun/wire/mcp"
)

// Target names this SDK in histories, ledger sources and control answers.
const Target = targets.MCPGo

// SDKVersion is the pinned version of github.com/mark3labs/mcp-go.
const SDKVersion = "v1.2.1"

// TerminateUnsupported is why /control/terminate answers 501.
const TerminateUnsupported = "mcp-go sends no close event: its streamable HTTP server has no way to tell a client " +
	"that a session or stream is ending other than closing the connection"

// shutdownTimeout bounds Close.
const shutdownTimeout = 10 * time.Second

// ServerConfig configures [NewServer].
type ServerConfig struct {
	// RetentionEvents bounds the events kept per session. mcp-go's own
	// InMemoryEventStore has no bound; with RetentionEvents > 0 the server
	// uses a store of this package behind the SDK's EventStore interface
	// that keeps the newest RetentionEvents events of each session.
	// 0 = the SDK's InMemoryEventStore (unbounded until the session ends).
	RetentionEvents int
	// SessionTTL is WithSessionIdleTTL: a session idle for this long is
	// terminated by the SDK's sweeper, which runs every max(TTL/2, 1s), so
	// expiry comes up to that much late. 0 = never.
	SessionTTL            time.Duration
	DefaultChargeDuration time.Duration
	// Tasks is "off" (or "") or "legacy": the SDK's own 2025-11-25 tasks
	// (WithTaskCapabilities: list, cancel, tools/call), with every tool
	// listed execution.taskSupport optional.
	Tasks    string
	Recorder sideeffects.Recorder // nil = sideeffects.NewMemory()
	Source   string               // Record.Source, default "mcp-go"
	Clock    runclock.Clock
	Logger   *slog.Logger
}

// Server is mcp-go's StreamableHTTPServer, stateful and with an event
// store, serving the charge and chatty tools.
type Server struct {
	host    *sdkserver.Host
	sdk     *server.MCPServer
	http    *server.StreamableHTTPServer
	handler http.Handler
	once    sync.Once
	err     error
	// taskOf maps a tools/call (session, request id) to the task the SDK
	// made of it, from the OnTaskCreated hook, for the tool to name.
	taskOf sync.Map
}

// TasksLegacy is ServerConfig.Tasks for the SDK's 2025-11-25 tasks.
const TasksLegacy = "legacy"

// callKey names one tools/call: its session and JSON-RPC id.
type callKey struct{ session, requestID string }

// requestIDKey carries the tools/call's request id (sdkserver.Front's
// header) into the SDK's request context, where the OnTaskCreated hook
// reads it.
type requestIDKey struct{}

// NewServer builds the server; it serves once [Server.Handler] is mounted.
func NewServer(cfg ServerConfig) (*Server, error) {
	tasks := false
	switch cfg.Tasks {
	case "", "off":
	case TasksLegacy:
		tasks = true
	default:
		return nil, fmt.Errorf("mcp-go server: tasks must be off or legacy, got %q", cfg.Tasks)
	}
	host, err := sdkserver.NewHostFor(Target, cfg.RetentionEvents, cfg.SessionTTL, sdkserver.Config{
		Recorder: cfg.Recorder, Source: cfg.Source, Clock: cfg.Clock, Logger: cfg.Logger,
		DefaultChargeDuration: cfg.DefaultChargeDuration,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{host: host}
	log := host.Logger()
	sopts := []server.ServerOption{server.WithHooks(s.hooks(tasks)), server.WithToolCapabilities(false)}
	if tasks {
		sopts = append(sopts, server.WithTaskCapabilities(true, true, true), server.WithTaskHooks(s.taskHooks()))
	}
	s.sdk = server.NewMCPServer("chaosrun-"+Target, SDKVersion, sopts...)
	for _, d := range tools.Definitions() {
		tool := mcp.NewToolWithRawSchema(d.Name, d.Description, d.InputSchema)
		if tasks {
			tool.Execution = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportOptional}
		}
		s.sdk.AddTool(tool, s.call)
	}

	var store server.EventStore = server.NewInMemoryEventStore()
	if cfg.RetentionEvents > 0 {
		store = newBoundedStore(cfg.RetentionEvents)
	}
	opts := []server.StreamableHTTPOption{
		server.WithStateful(true), server.WithEventStore(store), server.WithStreamableHTTPLogger(log),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			return context.WithValue(ctx, requestIDKey{}, r.Header.Get(sdkserver.RequestIDHeader))
		}),
	}
	if cfg.SessionTTL > 0 {
		opts = append(opts, server.WithSessionIdleTTL(cfg.SessionTTL))
	}
	s.http = server.NewStreamableHTTPServer(s.sdk, opts...)
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdkserver.Front(s.http, s.host))
	sdkserver.MountControl(mux, sdkserver.Control{
		Target: Target, Version: SDKVersion, Host: s.host,
		Expire: s.expire, TerminateUnsupported: TerminateUnsupported,
	})
	s.handler = mux
	return s, nil
}

// hooks record session_opened after a successful initialize and
// session_closed when the SDK unregisters the session (DELETE, the idle
// sweeper, shutdown); with tasks, result_written when tasks/result hands a
// task's result out.
func (s *Server) hooks(tasks bool) *server.Hooks {
	h := &server.Hooks{}
	if tasks {
		h.AddAfterTaskResult(func(_ context.Context, _ any, req *mcp.TaskResultRequest, res *mcp.TaskResultResult) {
			if req != nil && res != nil {
				s.host.TaskResultFetched(req.Params.TaskId, res.IsError)
			}
		})
	}
	h.AddAfterInitialize(func(ctx context.Context, _ any, req *mcp.InitializeRequest, res *mcp.InitializeResult) {
		if sess := server.ClientSessionFromContext(ctx); sess != nil && sess.SessionID() != "" {
			s.host.SessionOpened(sess.SessionID(), req.Params.ClientInfo.Name, res.ProtocolVersion)
		}
	})
	h.AddOnUnregisterSession(func(_ context.Context, sess server.ClientSession) {
		s.host.SessionClosed(sess.SessionID(), "expired")
	})
	return h
}

// taskHooks note which task the SDK made of a tools/call: the hook runs
// before the SDK starts the tool, in the tools/call's context.
func (s *Server) taskHooks() *server.TaskHooks {
	th := &server.TaskHooks{}
	th.AddOnTaskCreated(func(ctx context.Context, m server.TaskMetrics) {
		id, _ := ctx.Value(requestIDKey{}).(string)
		s.taskOf.Store(callKey{session: m.SessionID, requestID: id}, m.TaskID)
	})
	return th
}

// Handler serves MCP at /mcp and the control endpoints under /control/.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends running tools with an error result and terminates every
// session through the SDK (StreamableHTTPServer.Shutdown), which records
// their session_closed. It is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.host.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		defer cancel()
		if err := s.http.Shutdown(ctx); err != nil {
			s.err = fmt.Errorf("mcp-go server: shutdown: %w", err)
		}
	})
	return s.err
}

// expire terminates the session through the SDK's own DELETE handling (the
// path its idle sweeper also takes: terminate the id, purge its events).
func (s *Server) expire(session string) error {
	if !s.host.HasSession(session) {
		return sdkserver.ErrUnknownSession
	}
	s.host.NoteClosing(session, "expired")
	req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete, "/mcp", nil)
	if err != nil {
		return fmt.Errorf("expire %s: %w", session, err)
	}
	req.Header.Set(mcpwire.HeaderSessionID, session)
	w := &statusWriter{header: http.Header{}}
	s.http.ServeHTTP(w, req)
	if w.status != http.StatusOK {
		return fmt.Errorf("expire %s: the SDK answered DELETE with %d", session, w.status)
	}
	return nil
}

// statusWriter is the response writer of an in-process request whose body
// does not matter.
type statusWriter struct {
	header http.Header
	status int
}

func (w *statusWriter) Header() http.Header { return w.header }
func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *statusWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return len(p), nil
}

func (s *Server) request(ctx context.Context, req mcp.CallToolRequest) sdkserver.Request {
	r := sdkserver.Request{RequestID: req.Header.Get(sdkserver.RequestIDHeader)}
	if sess := server.ClientSessionFromContext(ctx); sess != nil {
		r.Session = sess.SessionID()
	}
	if req.Params.Task != nil {
		if id, ok := s.taskOf.LoadAndDelete(callKey{session: r.Session, requestID: r.RequestID}); ok {
			r.Task = id.(string)
		}
	}
	return r
}

func arguments(req mcp.CallToolRequest) json.RawMessage {
	if req.Params.RawArguments != nil {
		return req.Params.RawArguments
	}
	b, _ := json.Marshal(req.Params.Arguments)
	return b
}

// call runs the tool the request names. mcp-go cancels the handler's
// context when the POST's connection drops; the tool keeps running
// regardless. chatty emits through MCPServer.SendNotificationToClient,
// which queues the notification on the session's channel (100 deep, never
// blocking: a full channel refuses it). A call that asked for no progress
// token gets its request id as the token.
func (s *Server) call(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r := s.request(ctx, req)
	var token any = r.RequestID
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		token = req.Params.Meta.ProgressToken
	}
	emit := s.host.Emit(r, func(seq, total int) error {
		return s.sdk.SendNotificationToClient(ctx, mcpwire.MethodProgress, map[string]any{
			"progressToken": token, "progress": seq, "total": total,
		})
	})
	return result(s.host.Call(ctx, r, req.Params.Name, arguments(req), emit))
}

func result(o tools.Outcome) (*mcp.CallToolResult, error) {
	sc, err := o.JSON()
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{mcp.NewTextContent(string(sc))},
		StructuredContent: sc, IsError: o.IsError}, nil
}

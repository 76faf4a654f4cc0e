package gosdk

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/sdkserver"
	"github.com/chaosrun/chaosrun/targets/tools"
	mcpwire "github.com/chaosrun/chaosrun/wire/mcp"
)

// Target names this SDK in histories, ledger sources and control answers.
const Target = targets.GoSDK

// SDKVersion is the pinned version of github.com/modelcontextprotocol/go-sdk.
const SDKVersion = "v1.8.0"

// BytesPerEvent is how many bytes of the SDK's MemoryEventStore one
// retained event is taken to need when ServerConfig.RetentionEvents is
// mapped onto MemoryEventStore.SetMaxBytes: about the size of one chatty
// progress notification as the SDK stores it.
const BytesPerEvent = 128

// TerminateUnsupported is why /control/terminate answers 501.
const TerminateUnsupported = "go-sdk has no session-terminating close event: its only close event " +
	"(RequestExtra.CloseSSEStream, SEP-1699) is available to a running tool handler and asks the client to reconnect"

// ServerConfig configures [NewServer].
type ServerConfig struct {
	// RetentionEvents bounds the SDK's MemoryEventStore through SetMaxBytes
	// (RetentionEvents × BytesPerEvent). The bound is in bytes and shared
	// by every session of the server; when it is exceeded the store drops
	// the oldest event of every stream in turn. 0 = the SDK default
	// (10 MiB).
	RetentionEvents int
	// SessionTTL is StreamableHTTPOptions.SessionTimeout: a session with no
	// HTTP request for this long is closed (the timer is paused while a
	// POST is in flight). 0 = never.
	SessionTTL time.Duration
	// Stateless is StreamableHTTPOptions.Stateless, which is how the SDK
	// speaks 2026-07-28: every POST is served by a session of its own that
	// ends with it, GET and DELETE answer 405, and no Mcp-Session-Id is read
	// or set (see the package doc for what it does at each version).
	// RetentionEvents and SessionTTL then mean nothing.
	Stateless bool
	// OnCancel is what a tool does when the SDK cancels its request (a
	// 2026-07-28 request whose handler context ends): one of
	// tools.OnCancelModes, "" is stop. The SDK's default options never
	// cancel one when its response stream closes (see the package doc).
	OnCancel              string
	DefaultChargeDuration time.Duration
	Recorder              sideeffects.Recorder // nil = sideeffects.NewMemory()
	Source                string               // Record.Source, default "go-sdk"
	Clock                 runclock.Clock
	Logger                *slog.Logger
}

// Server is the go-sdk's StreamableHTTPHandler, with a MemoryEventStore,
// serving the charge and chatty tools.
type Server struct {
	host    *sdkserver.Host
	sdk     *mcp.Server
	handler http.Handler

	mu       sync.Mutex
	closed   bool
	watchers sync.WaitGroup // one per open session, recording its close
	once     sync.Once
}

// NewServer builds the server; it serves once [Server.Handler] is mounted.
func NewServer(cfg ServerConfig) (*Server, error) {
	host, err := sdkserver.NewHostFor(Target, cfg.RetentionEvents, cfg.SessionTTL, sdkserver.Config{
		Recorder: cfg.Recorder, Source: cfg.Source, Clock: cfg.Clock, Logger: cfg.Logger,
		DefaultChargeDuration: cfg.DefaultChargeDuration, OnCancel: cfg.OnCancel,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{host: host}
	log := host.Logger()
	s.sdk = mcp.NewServer(&mcp.Implementation{Name: "chaosrun-" + Target, Version: SDKVersion}, &mcp.ServerOptions{Logger: log})
	for _, d := range tools.Definitions() {
		s.sdk.AddTool(&mcp.Tool{Name: d.Name, Description: d.Description, InputSchema: d.InputSchema}, s.call)
	}
	s.sdk.AddReceivingMiddleware(s.watchInitialize)

	store := mcp.NewMemoryEventStore(nil)
	if cfg.RetentionEvents > 0 {
		store.SetMaxBytes(cfg.RetentionEvents * BytesPerEvent)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.sdk }, &mcp.StreamableHTTPOptions{
		EventStore: store, SessionTimeout: cfg.SessionTTL, Logger: log, Stateless: cfg.Stateless,
	})
	mux := http.NewServeMux()
	mux.Handle("/mcp", sdkserver.Front(h, s.host))
	sdkserver.MountControl(mux, sdkserver.Control{
		Target: Target, Version: SDKVersion, Host: s.host,
		Expire: s.expire, TerminateUnsupported: TerminateUnsupported,
	})
	s.handler = mux
	return s, nil
}

// Handler serves MCP at /mcp and the control endpoints under /control/.
func (s *Server) Handler() http.Handler { return s.handler }

// Close ends running tools with an error result, closes every session and
// returns once every session_closed record is written. It is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.host.Shutdown()
		for ss := range s.sdk.Sessions() {
			_ = ss.Close()
		}
		s.watchers.Wait()
	})
	return nil
}

// expire closes the session through the SDK, as its idle timeout does.
// The SDK closes a session only once its in-flight calls have returned, so
// the close runs in the background.
func (s *Server) expire(session string) error {
	for ss := range s.sdk.Sessions() {
		if ss.ID() == session {
			s.host.NoteClosing(session, "expired")
			go func() { _ = ss.Close() }()
			return nil
		}
	}
	return sdkserver.ErrUnknownSession
}

// watchInitialize records session_opened when initialize succeeds, and
// session_closed when the SDK later closes that session.
func (s *Server) watchInitialize(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method != "initialize" || err != nil {
			return res, err
		}
		ss, ok := req.GetSession().(*mcp.ServerSession)
		ir, ok2 := res.(*mcp.InitializeResult)
		if !ok || !ok2 || ss.ID() == "" {
			return res, err
		}
		client := ""
		if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
			client = p.ClientInfo.Name
		}
		s.opened(ss, client, ir.ProtocolVersion)
		return res, err
	}
}

func (s *Server) opened(ss *mcp.ServerSession, client, protocol string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.host.SessionOpened(ss.ID(), client, protocol)
	s.watchers.Add(1)
	go func() {
		defer s.watchers.Done()
		_ = ss.Wait()
		s.host.SessionClosed(ss.ID(), "expired")
	}()
}

// request identifies a call for the host. A 2026-07-28 request (its
// _meta names the version) says who the client is itself, and is
// cancelled when the SDK ends its handler's context.
func request(ctx context.Context, req *mcp.CallToolRequest) sdkserver.Request {
	r := sdkserver.Request{Session: req.Session.ID()}
	if req.Extra != nil && req.Extra.Header != nil {
		r.RequestID = req.Extra.Header.Get(sdkserver.RequestIDHeader)
		r.Stream = req.Extra.Header.Get(sdkserver.StreamHeader)
	}
	meta := req.Params.GetMeta()
	if v, _ := meta[mcp.MetaKeyProtocolVersion].(string); mcpwire.ModernVersion(v) {
		r.Cancelled = ctx.Done()
		if info, ok := meta[mcpwire.MetaClientInfo].(map[string]any); ok {
			r.Client, _ = info["name"].(string)
		}
	}
	return r
}

// call runs the tool the request names. chatty emits through
// ServerSession.NotifyProgress with the handler's own context, which is
// what routes a notification to the call's stream. A call that asked for
// no progress token gets its request id as the token.
func (s *Server) call(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	r := request(ctx, req)
	token := req.Params.GetProgressToken()
	if token == nil {
		token = r.RequestID
	}
	emit := s.host.Emit(r, func(seq, total int) error {
		return req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(seq), Total: float64(total),
		})
	})
	return result(s.host.Call(ctx, r, req.Params.Name, req.Params.Arguments, emit))
}

func result(o tools.Outcome) (*mcp.CallToolResult, error) {
	sc, err := o.JSON()
	if err != nil {
		return nil, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(sc)}},
		StructuredContent: sc, IsError: o.IsError}, nil
}

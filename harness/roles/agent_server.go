package roles

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/spf13/cobra"
)

// serverTarget is what the server agent serves, whatever the target.
type serverTarget interface {
	Serve(ln net.Listener) error
	Shutdown(ctx context.Context) error
	Close() error
}

type serverFlags struct {
	agentFlags
	target        string
	ledger        string
	cfg           server.Config
	drain         time.Duration
	allowedOrigin []string
	command       []string
	image         string
	readyTimeout  time.Duration
	fixedAddr     string
	stateless     bool
}

// serverLong is the server agent's help, and the contract of the
// bring-your-own targets (docs/byo-targets.md tells the whole of it).
func serverLong() string {
	return `Serve the MCP server under test on /mcp: the reference server, an SDK's (go-sdk, mcp-go), or a
bring-your-own command (--target command --command ARG --command ARG ...).

A command is started as this agent's child, in the runner's working directory (a relative command
path resolves there, not against --state; a bare name is looked up in PATH), with this environment:

` + byo.EnvHelp() + `

For --addr with port 0 the agent picks a free port; --listen names a fixed address the command
listens on instead, for a server that cannot be told one. The command's stdout and stderr go to the
agent's stderr. Once the address accepts TCP connections (within --ready-timeout; if the command
exits first, the agent fails with its exit status) the agent prints http://ADDR as its first
stdout line. On SIGTERM it forwards SIGTERM to the command and waits for it up to
--drain-timeout, then kills it. The command stays in the agent's process group, so a crash
(SIGKILL of the group) or a pause (SIGSTOP) takes it along; if the agent dies alone, the command
is killed too.

--target image is served by the docker runtime, which runs the image in this agent's place; the
agent itself refuses it.`
}

func newServerAgentCmd() *cobra.Command {
	var f serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve an MCP server under test (the reference server, an SDK's, or your own command) on /mcp",
		Long:  serverLong(),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch f.target {
			case targets.Command:
				return f.runCommand(cmd)
			case targets.Image:
				return exitcode.With(exitcode.Invalid, errors.New("server.target image: runs only on the docker runtime (--runtime docker), "+
					"which starts the image in the server agent's place"))
			}
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			clock, err := f.clock()
			if err != nil {
				return err
			}
			srv, err := f.build(clock, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			ln, err := f.listen(cmd)
			if err != nil {
				srv.Close()
				return err
			}
			announce(cmd, ln)
			return serveUntilDone(ctx, srv, ln, f.drain)
		},
	}
	f.register(cmd, true)
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", targets.Reference, "server implementation: reference, go-sdk, mcp-go, command (image: docker runtime only)")
	fl.StringVar(&f.ledger, "ledger", "", "ledger URL; empty keeps records in memory")
	fl.IntVar(&f.cfg.RetentionEvents, "retention-events", 1000, "per-session event buffer; 0 = unbounded")
	fl.DurationVar(&f.cfg.RetentionAge, "retention-age", 0, "evict events older than this; 0 = no limit")
	fl.StringVar(&f.cfg.OnUnresumable, "on-unresumable", server.OnUnresumableGone, "answer to an evicted Last-Event-ID: gone (410) or silent_head (the incident's bug)")
	fl.StringVar(&f.cfg.EventStore, "event-store", server.EventStoreMemory, "memory, file (survives a restart) or redis (shared by replicas)")
	fl.StringVar(&f.cfg.StorePath, "store-path", "events.log", "the file event store's journal")
	fl.StringVar(&f.cfg.RedisAddr, "redis-addr", "", "the redis event store's server, host:port")
	fl.StringVar(&f.cfg.StoreOwner, "store-owner", "", "the redis event store: this replica's stable name")
	fl.DurationVar(&f.cfg.SessionTTL, "session-ttl", 10*time.Minute, "idle session TTL; 0 = never")
	fl.DurationVar(&f.cfg.Keepalive, "keepalive", 0, "SSE comment interval; 0 = none")
	fl.DurationVar(&f.cfg.Retry, "retry", 0, "retry field of 2025-11-25 streams and of the shutdown hint; 0 = 1s")
	fl.DurationVar(&f.cfg.DefaultChargeDuration, "charge-duration", time.Second, "charge duration when a call gives none")
	fl.StringVar(&f.cfg.Tasks, "tasks", server.TasksOff, "tasks: off, extension (2026-07-28) or legacy (the experimental tasks of 2025-11-25; also mcp-go)")
	fl.StringVar(&f.cfg.TaskStore, "task-store", server.EventStoreMemory, "task store: memory, file (survives a restart) or redis (shared by replicas)")
	fl.StringVar(&f.cfg.TaskStorePath, "task-store-path", "tasks.log", "the file task store's journal")
	fl.DurationVar(&f.cfg.TaskTTL, "task-ttl", server.DefaultTaskTTL, "how long a task is kept from its creation (ttlMs)")
	fl.DurationVar(&f.cfg.TaskPollInterval, "task-poll-interval", server.DefaultTaskPollInterval, "the pollIntervalMs suggested to clients")
	fl.StringVar(&f.cfg.OnCancel, "on-cancel", tools.OnCancelStop, "what a tool does when its request is cancelled (2026-07-28: its stream closes): stop, ignore or commit_then_notice")
	fl.StringSliceVar(&f.allowedOrigin, "allowed-origin", nil, "Origin values allowed besides loopback ones (repeatable); * allows any")
	fl.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long running tools may finish")
	fl.BoolVar(&f.stateless, "stateless", false, "go-sdk: serve stateless (StreamableHTTPOptions.Stateless), the SDK's way of speaking 2026-07-28")
	fl.StringArrayVar(&f.command, "command", nil, "target command: the command and its arguments, one flag each")
	fl.StringVar(&f.fixedAddr, "listen", "", "target command: the fixed host:port the command listens on, instead of --addr")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", byo.DefaultReadyTimeout, "target command: how long the command may take to accept connections")
	fl.StringVar(&f.image, "image", "", "target image: the image the docker runtime runs in this agent's place")
	return cmd
}

func (f *serverFlags) recorder() sideeffects.Recorder {
	if f.ledger == "" {
		return sideeffects.NewMemory()
	}
	return sideeffects.NewClient(f.ledger)
}

func (f *serverFlags) build(clock runclock.Clock, stderr io.Writer) (serverTarget, error) {
	switch f.target {
	case targets.Reference:
		cfg := f.cfg
		cfg.StorePath = f.path(cfg.StorePath)
		cfg.TaskStorePath = f.path(cfg.TaskStorePath)
		cfg.AllowedOrigins = f.allowedOrigin
		cfg.Recorder = f.recorder()
		cfg.Clock = clock
		cfg.Logger = f.logger(stderr, "server")
		srv, err := server.New(cfg)
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
		return srv, nil
	case gosdk.Target:
		srv, err := gosdk.NewServer(gosdk.ServerConfig{RetentionEvents: f.cfg.RetentionEvents, SessionTTL: f.cfg.SessionTTL,
			Stateless: f.stateless, OnCancel: f.cfg.OnCancel, DefaultChargeDuration: f.cfg.DefaultChargeDuration, Recorder: f.recorder(), Clock: clock, Logger: f.logger(stderr, "server")})
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
		return newHandlerServer(srv.Handler(), srv.Close), nil
	case mcpgo.Target:
		srv, err := mcpgo.NewServer(mcpgo.ServerConfig{RetentionEvents: f.cfg.RetentionEvents, SessionTTL: f.cfg.SessionTTL,
			DefaultChargeDuration: f.cfg.DefaultChargeDuration, Tasks: f.cfg.Tasks, Recorder: f.recorder(), Clock: clock, Logger: f.logger(stderr, "server")})
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
		return newHandlerServer(srv.Handler(), srv.Close), nil
	}
	return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("--target: unknown server target %q", f.target))
}

// handlerServer serves an SDK's http.Handler; Shutdown stops taking
// requests, lets those in flight finish until ctx ends, then closes the SDK
// server (which ends running tools and records their sessions' close).
type handlerServer struct {
	http  *http.Server
	close func() error
}

func newHandlerServer(h http.Handler, close func() error) *handlerServer {
	return &handlerServer{http: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, close: close}
}

func (h *handlerServer) Serve(ln net.Listener) error {
	if err := h.http.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (h *handlerServer) Shutdown(ctx context.Context) error {
	return errors.Join(h.http.Shutdown(ctx), h.close())
}

func (h *handlerServer) Close() error { return errors.Join(h.http.Close(), h.close()) }

// serveUntilDone serves until ctx ends (SIGTERM), then shuts down
// gracefully, letting running tools finish for up to drain.
func serveUntilDone(ctx context.Context, srv serverTarget, ln net.Listener, drain time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		srv.Close()
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			return exitcode.With(exitcode.Harness, err)
		}
		return nil
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	return exitcode.With(exitcode.Harness, err)
}

// runCommand serves target command: it starts the command under the
// bring-your-own contract, announces its address once it accepts
// connections, and stops it on SIGTERM (see serverLong).
func (f *serverFlags) runCommand(cmd *cobra.Command) error {
	// The agent must forward SIGTERM however it was started, so it catches
	// the signal itself.
	ctx, stopSignals := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
	defer stopSignals()
	ctx, cancel := f.context(ctx)
	defer cancel()
	clock, err := f.clock()
	if err != nil {
		return err
	}
	sup := &byo.Supervisor{
		Command:      f.command,
		Env:          byo.Env{ListenAddr: cmp.Or(f.fixedAddr, f.addr), LedgerURL: f.ledger, Clock: clock, StateDir: f.state},
		Output:       cmd.ErrOrStderr(),
		ReadyTimeout: f.readyTimeout,
		Drain:        f.drain,
	}
	if err := sup.Start(ctx); err != nil {
		if errors.Is(err, byo.ErrNoCommand) {
			return exitcode.With(exitcode.Invalid, fmt.Errorf("--command: %w", err))
		}
		return exitcode.With(exitcode.Harness, err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "http://%s\n", sup.Addr())
	return exitcode.With(exitcode.Harness, sup.Serve(ctx))
}

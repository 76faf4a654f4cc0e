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
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/wire/mcp"
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
	ledger       string
	drain        time.Duration
	readyTimeout time.Duration
	// What to serve when there is no configuration file: by hand, a
	// command of the user's (--target command --command ...).
	target    string
	command   []string
	fixedAddr string
	image     string
}

// serverLong is the server agent's help, and the contract of the
// bring-your-own targets (docs/byo-targets.md tells the whole of it).
func serverLong() string {
	return `Serve the MCP server under test on /mcp: the reference server, an SDK's (go-sdk, mcp-go), or a
bring-your-own command (--target command --command ARG --command ARG ...).

The runner writes what to serve, with the target's options, in the agent's configuration file
(--config, agent.json in the state folder). Without one the flags say it: --target, with the
target's defaults, and for a command --command and --listen.

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
			cfg, err := f.serverConfig(cmd)
			if err != nil {
				return err
			}
			switch opts := cfg.Options.(type) {
			case *catalog.CommandOptions:
				return f.runCommand(cmd, opts)
			case *catalog.ImageOptions:
				return exitcode.With(exitcode.Invalid, errors.New("server.target image: runs only on the docker runtime (--runtime docker), "+
					"which starts the image in the server agent's place"))
			}
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			clock, err := f.clock()
			if err != nil {
				return err
			}
			srv, err := f.build(cfg, clock, cmd.ErrOrStderr())
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
	f.registerConfig(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.ledger, "ledger", "", "ledger URL; empty keeps records in memory")
	fl.DurationVar(&f.drain, "drain-timeout", 30*time.Second, "on SIGTERM, how long running tools may finish")
	fl.DurationVar(&f.readyTimeout, "ready-timeout", byo.DefaultReadyTimeout, "target command: how long the command may take to accept connections")
	fl.StringVar(&f.target, "target", targets.Reference, "without a configuration file: the server (reference, go-sdk, mcp-go, command; image: docker runtime only), with its defaults")
	fl.StringArrayVar(&f.command, "command", nil, "without a configuration file, target command: the command and its arguments, one flag each")
	fl.StringVar(&f.fixedAddr, "listen", "", "without a configuration file, target command: the fixed host:port the command listens on, instead of --addr")
	fl.StringVar(&f.image, "image", "", "without a configuration file, target image: the image the docker runtime runs in this agent's place")
	return cmd
}

// serverConfig is the agent's configuration file or, without one, the
// configuration the flags make: the target with its defaults, and for a
// command or an image what to run.
func (f *serverFlags) serverConfig(cmd *cobra.Command) (ServerConfig, error) {
	var cfg ServerConfig
	found, err := f.readConfig(&cfg)
	switch fl := cmd.Flags(); {
	case err != nil:
		return cfg, err
	case found && (fl.Changed("target") || fl.Changed("command") || fl.Changed("listen") || fl.Changed("image")):
		return cfg, exitcode.With(exitcode.Invalid, fmt.Errorf("%s gives the configuration: --target, --command, --listen and --image serve without one", f.path(f.config)))
	case found:
		return cfg, nil
	}
	s, ok := catalog.Server(f.target)
	if !ok {
		return cfg, exitcode.With(exitcode.Invalid, fmt.Errorf("--target: unknown server target %q", f.target))
	}
	cfg = ServerConfig{Target: f.target, Options: s.Options()}
	switch opts := cfg.Options.(type) {
	case *catalog.CommandOptions:
		opts.Command, opts.Listen = f.command, f.fixedAddr
	case *catalog.ImageOptions:
		opts.Image = f.image
	}
	return cfg, nil
}

func (f *serverFlags) recorder() sideeffects.Recorder {
	if f.ledger == "" {
		return sideeffects.NewMemory()
	}
	return sideeffects.NewClient(f.ledger)
}

// chargeDuration is how long a charge runs when its call gives no
// duration (the workload always gives one).
const chargeDuration = time.Second

// build builds the server the configuration names, with its options (of
// the type the target declares: the configuration was decoded so).
func (f *serverFlags) build(cfg ServerConfig, clock runclock.Clock, stderr io.Writer) (serverTarget, error) {
	log := f.logger(stderr, "server")
	var handler http.Handler
	var closer func() error
	var err error
	switch cfg.Target {
	case targets.Reference:
		c := cfg.Options.(*server.Options).Config()
		c.Tasks, c.RedisAddr, c.StoreOwner = cfg.Tasks, cfg.Redis, cfg.Owner
		c.StorePath, c.TaskStorePath = f.path("events.log"), f.path("tasks.log")
		c.DefaultChargeDuration, c.Recorder, c.Clock, c.Logger = chargeDuration, f.recorder(), clock, log
		srv, err := server.New(c)
		if err != nil {
			return nil, exitcode.With(exitcode.Invalid, err)
		}
		return srv, nil
	case gosdk.Target:
		c := gosdk.ServerConfigOf(cfg.Options.(*gosdk.ServerOptions))
		c.Stateless = mcp.ModernVersion(cfg.Protocol) // how the SDK speaks 2026-07-28
		c.DefaultChargeDuration, c.Recorder, c.Clock, c.Logger = chargeDuration, f.recorder(), clock, log
		var srv *gosdk.Server
		if srv, err = gosdk.NewServer(c); err == nil {
			handler, closer = srv.Handler(), srv.Close
		}
	case mcpgo.Target:
		c := mcpgo.ServerConfigOf(cfg.Options.(*mcpgo.ServerOptions))
		c.Tasks = cfg.Tasks
		c.DefaultChargeDuration, c.Recorder, c.Clock, c.Logger = chargeDuration, f.recorder(), clock, log
		var srv *mcpgo.Server
		if srv, err = mcpgo.NewServer(c); err == nil {
			handler, closer = srv.Handler(), srv.Close
		}
	default:
		return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("target: no server for %q", cfg.Target))
	}
	if err != nil {
		return nil, exitcode.With(exitcode.Invalid, err)
	}
	return newHandlerServer(handler, closer), nil
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
func (f *serverFlags) runCommand(cmd *cobra.Command, opts *catalog.CommandOptions) error {
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
		Command:      opts.Command,
		Env:          byo.Env{ListenAddr: cmp.Or(opts.Listen, f.addr), LedgerURL: f.ledger, Clock: clock, StateDir: f.state},
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

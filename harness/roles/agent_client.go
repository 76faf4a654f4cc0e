package roles

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/spf13/cobra"
)

type clientFlags struct {
	agentFlags
	target       string
	workloadTmpl string
	workloadFile string
	history      string
	command      []string
	endpoints    []string
	opts         workload.Options
}

func newClientAgentCmd() *cobra.Command {
	var f clientFlags
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Run the workload's logical clients against an MCP endpoint, writing history.jsonl",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			plan, err := f.plan()
			if err != nil {
				return err
			}
			clock, err := f.clock()
			if err != nil {
				return err
			}
			if f.target == targets.Command {
				if len(f.endpoints) > 1 {
					return exitcode.With(exitcode.Invalid, errors.New("--endpoint: a command client takes one endpoint"))
				}
				f.opts.Endpoint = endpointOf(f.endpoints, 0)
				return f.runCommand(ctx, cmd, clock, plan)
			}
			hist, err := history.Create(f.path(f.history), clock)
			if err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			defer hist.Close()
			opts := f.opts
			opts.CursorDir = f.path(opts.CursorDir)
			if err := os.MkdirAll(opts.CursorDir, 0o755); err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			opts.Clock, opts.History, opts.Logger = clock, hist, f.logger(cmd.ErrOrStderr(), "client")
			return runClients(ctx, f.target, opts, f.endpoints, plan)
		},
	}
	f.register(cmd, false)
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", targets.Resumable, "client implementation: resumable, naive, go-sdk, mcp-go, command")
	fl.StringArrayVar(&f.command, "command", nil, "target command: the client command and its arguments, one flag each")
	fl.StringArrayVar(&f.endpoints, "endpoint", nil, "the MCP endpoint URL (through the proxy); given once per proxy agent when several carry the clients, client i uses the (i mod n)-th")
	fl.StringVar(&f.workloadTmpl, "workload-template", "", "the workload as JSON: {\"clients\": N, \"calls\": [...]}, every client making the same calls")
	fl.StringVar(&f.workloadFile, "workload", "", "a file holding the workload plan as JSON")
	fl.StringVar(&f.history, "history", "history.jsonl", "the history file (appended to)")
	fl.StringVar(&f.opts.Cursor, "cursor", "memory", "cursor store: memory or file")
	fl.StringVar(&f.opts.CursorDir, "cursor-dir", "cursors", "folder of the file cursors")
	fl.StringVar(&f.opts.Protocol, "protocol", mcpwire.LatestVersion, "protocol version to ask for")
	fl.StringVar(&f.opts.Tasks, "tasks", "off", "tasks: off, extension (2026-07-28: the resumable client declares it and polls its tasks) or legacy (2025-11-25: it calls tools as tasks where the server offers them)")
	fl.DurationVar(&f.opts.Backoff.Initial, "backoff-initial", time.Second, "first reconnect delay")
	fl.DurationVar(&f.opts.Backoff.Max, "backoff-max", 30*time.Second, "largest reconnect delay")
	fl.IntVar(&f.opts.Backoff.Retries, "backoff-retries", 8, "reconnect attempts before giving up")
	fl.DurationVar(&f.opts.ReadTimeout, "read-timeout", 0, "treat a stream silent this long as broken; 0 = never")
	fl.Int64Var(&f.opts.Seed, "seed", 1, "seed of the backoff jitter")
	return cmd
}

func (f *clientFlags) plan() (workload.Plan, error) {
	switch {
	case f.workloadTmpl != "" && f.workloadFile != "":
		return workload.Plan{}, exitcode.With(exitcode.Invalid, errors.New("give --workload-template or --workload, not both"))
	case f.workloadFile != "":
		p, err := workload.LoadPlan(f.path(f.workloadFile))
		return p, exitcode.With(exitcode.Invalid, err)
	case f.workloadTmpl != "":
		var t workload.Template
		if err := json.Unmarshal([]byte(f.workloadTmpl), &t); err != nil {
			return workload.Plan{}, exitcode.With(exitcode.Invalid, fmt.Errorf("--workload-template: %w", err))
		}
		return t.Expand(), nil
	}
	return workload.Plan{}, exitcode.With(exitcode.Invalid, errors.New("a workload is required (--workload-template or --workload)"))
}

// endpointOf is the endpoint of the i-th client (from 0): the clients are
// dealt over the endpoints in turn, one per proxy agent.
func endpointOf(endpoints []string, i int) string {
	if len(endpoints) == 0 {
		return ""
	}
	return endpoints[i%len(endpoints)]
}

// runClients runs every logical client concurrently, each against its
// endpoint (endpointOf), and waits for all.
func runClients(ctx context.Context, target string, opts workload.Options, endpoints []string, plan workload.Plan) error {
	run, err := clientRunner(target)
	if err != nil {
		return err
	}
	errs := make([]error, len(plan.Clients))
	var wg sync.WaitGroup
	for i, c := range plan.Clients {
		o := opts
		o.Endpoint = endpointOf(endpoints, i)
		wg.Go(func() { errs[i] = run(ctx, o, c) })
	}
	wg.Wait()
	return exitcode.With(exitcode.Harness, errors.Join(errs...))
}

type clientFunc func(ctx context.Context, opts workload.Options, c workload.Client) error

func clientRunner(target string) (clientFunc, error) {
	switch target {
	case client.TargetNaive, client.TargetResumable:
		return func(ctx context.Context, opts workload.Options, c workload.Client) error {
			return client.Run(ctx, target, opts, c)
		}, nil
	case gosdk.Target:
		return gosdk.RunClient, nil
	case mcpgo.Target:
		return mcpgo.RunClient, nil
	}
	return nil, exitcode.With(exitcode.Invalid, fmt.Errorf("--target: unknown client target %q", target))
}

// runCommand runs a bring-your-own client (--target command) to its end
// under the contract of targets/byo: the MCP URL and an operations file in
// its environment, its output on the agent's stderr. How the client ended
// is kept in its state folder for the results; the agent itself fails only
// when the client could not be started.
func (f *clientFlags) runCommand(ctx context.Context, cmd *cobra.Command, clock runclock.Clock, plan workload.Plan) error {
	ops := byo.Operations{Endpoint: f.opts.Endpoint}
	for _, c := range plan.Clients {
		for _, call := range c.Calls {
			args, err := call.Arguments()
			if err != nil {
				return exitcode.With(exitcode.Invalid, err)
			}
			ops.Operations = append(ops.Operations, byo.Operation{Client: c.ID, Call: call.ID, Tool: call.Tool,
				Arguments: args, Idempotent: call.IsIdempotent()})
		}
	}
	state, err := filepath.Abs(f.state)
	if err != nil {
		return exitcode.With(exitcode.Harness, err)
	}
	env := byo.ClientEnv{MCPURL: f.opts.Endpoint, Clock: clock, StateDir: state}
	exit, err := byo.RunClient(ctx, f.command, env, ops, cmd.ErrOrStderr())
	if serr := byo.SaveExit(state, exit); serr != nil {
		err = errors.Join(err, serr)
	}
	return exitcode.With(exitcode.Harness, err)
}

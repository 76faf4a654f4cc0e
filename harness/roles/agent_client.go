package roles

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/spf13/cobra"
)

func newClientAgentCmd() *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Run the workload's logical clients against an MCP endpoint, writing history.jsonl",
		Long: `Run the workload's logical clients, as the agent's configuration file says (--config, agent.json
in the state folder, which the runner writes): the client target and its options, the endpoint through
each proxy agent, the workload and the seed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := f.context(cmd.Context())
			defer cancel()
			var cfg ClientConfig
			switch found, err := f.readConfig(&cfg); {
			case err != nil:
				return err
			case !found:
				return exitcode.With(exitcode.Invalid, fmt.Errorf("%s: no configuration: the runner writes it", f.path(f.config)))
			}
			clock, err := f.clock()
			if err != nil {
				return err
			}
			plan := cfg.Workload.Expand()
			if c, ok := cfg.Options.(*catalog.ClientCommandOptions); ok {
				if len(cfg.Endpoints) != 1 {
					return exitcode.With(exitcode.Invalid, errors.New("endpoints: a command client takes one endpoint"))
				}
				return f.runCommand(ctx, cmd, c, cfg.Endpoints[0], clock, plan)
			}
			hist, err := history.Create(f.path(history.File), clock)
			if err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			defer hist.Close()
			opts := workload.Options{Protocol: cfg.Protocol, Tasks: cfg.Tasks, Seed: cfg.Seed, CursorDir: f.path("cursors")}
			if s, ok := cfg.Options.(workload.Settings); ok {
				s.Apply(&opts)
			}
			if err := os.MkdirAll(opts.CursorDir, 0o755); err != nil {
				return exitcode.With(exitcode.Harness, err)
			}
			opts.Clock, opts.History, opts.Logger = clock, hist, f.logger(cmd.ErrOrStderr(), "client")
			return runClients(ctx, cfg.Target, opts, cfg.Endpoints, plan)
		},
	}
	f.register(cmd, false)
	f.registerConfig(cmd)
	return cmd
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
func (f *agentFlags) runCommand(ctx context.Context, cmd *cobra.Command, opts *catalog.ClientCommandOptions, endpoint string, clock runclock.Clock, plan workload.Plan) error {
	ops := byo.Operations{Endpoint: endpoint}
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
	env := byo.ClientEnv{MCPURL: endpoint, Clock: clock, StateDir: state}
	exit, err := byo.RunClient(ctx, opts.Command, env, ops, cmd.ErrOrStderr())
	if serr := byo.SaveExit(state, exit); serr != nil {
		err = errors.Join(err, serr)
	}
	return exitcode.With(exitcode.Harness, err)
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/probe"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"github.com/google/shlex"
	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"
)

type probeFlags struct {
	serverCommand, serverURL, server string
	clientCommand, client            string
	tool, args                       string
	effectTool, effectArgs           string
	protocols                        []string
	only                             []string
	baseline                         string
	out                              string
	parallel                         int
	timeScale                        float64
	seed                             int64
	maxAway                          time.Duration
	quiet                            bool
}

func newProbeCmd() *cobra.Command {
	var f probeFlags
	cmd := &cobra.Command{
		Use:   "probe (--server-command CMD | --server-url URL | --server YAML | --client-command CMD | --client YAML)",
		Short: "Measure the four conditions of one server or client with a fixed battery of generated experiments",
		Long: `Probe runs a fixed battery of generated experiments against one server (or one client) and
prints a scorecard, per condition of "a disconnect is not a termination" and per protocol revision:
the retention window in events and in time, the answer to a Last-Event-ID the server cannot
honour (evicted, and never issued), the idle session TTL and 404 after it, resumption (event
ids, priming event, retry, a replay of exactly the missed events), whether a closed stream
cancels a call, and whether a re-issued call executes twice. For a client: a cursor that
survives the client's restart, reset/5xx → resume, 404 → re-initialize without a blind retry,
409/410 → a surfaced gap, a close event → stop, and blind retries counted.

Every measurement comes from what a run recorded (wire.jsonl, the ledger, faults.jsonl, the
verdict); where the records cannot tell, the check says so. The probe writes OUT/probe-<id>/:
probe.md, probe.json, checks.json (the MCP conformance suite's shape, one per scenario under
checks/) and experiments/, every generated experiment's results, which 'chaosrun report'
judges again. --baseline takes the conformance suite's expected-failures file: the exit code
is 1 when a failure is not in it or an entry of it now passes.

A server command's arguments may hold {addr}, {host} and {port}. The tools are chatty and charge
for chaosrun's own servers; for any other, --tool and --args name the call whose stream carries
progress notifications (--effect-tool and --effect-args the call with a side effect), or the
probe lists the server's tools and chooses: a tool with a count argument (rows, events, items,
count, ...) asked for 300, and the first other tool with its required arguments filled in; the
report says what it chose.`,
		Example: `  chaosrun probe --server '{target: reference, retention_events: 50}' --protocol 2025-11-25
  chaosrun probe --server-command "bin/shop-gosdk --addr {addr}" --tool export_rows --args '{"rows": 300}' \
      --effect-tool place_order --effect-args '{"order_id": "o-{{call}}", "amount_cents": 100}'
  chaosrun probe --client '{target: resumable, cursor: file}'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return f.run(cmd) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.serverCommand, "server-command", "", "the server to probe, as a command line ({addr}, {host}, {port} are its address)")
	fl.StringVar(&f.serverURL, "server-url", "", "a server already running on loopback (http://127.0.0.1:PORT/mcp); process faults are then unavailable")
	fl.StringVar(&f.server, "server", "", "the server as an experiment's server: mapping, inline YAML or @FILE ({target: go-sdk, session_ttl: 2m})")
	fl.StringVar(&f.clientCommand, "client-command", "", "probe a client instead: your client program, as a command line")
	fl.StringVar(&f.client, "client", "", "probe a client instead, as an experiment's client: mapping ({target: resumable, cursor: file})")
	fl.StringVar(&f.tool, "tool", "", "the tool whose stream carries progress events (default chatty for chaosrun's own servers)")
	fl.StringVar(&f.args, "args", "", "its arguments, as JSON")
	fl.StringVar(&f.effectTool, "effect-tool", "", "the tool with a side effect, for the stream-close and re-issue checks (default charge, or --tool)")
	fl.StringVar(&f.effectArgs, "effect-args", "", "its arguments, as JSON ({{call}} is replaced per call)")
	fl.StringSliceVar(&f.protocols, "protocol", nil, "limit the revisions probed (repeat or comma-separate); default every revision")
	fl.StringSliceVar(&f.only, "only", nil, "run only these parts of a server's battery: "+strings.Join(probe.Parts, ", "))
	fl.StringVar(&f.baseline, "baseline", "", "expected failures (the conformance suite's format: server:/client: lists of scenario or scenario:check-id)")
	fl.StringVar(&f.out, "out", "results", "results root; the probe writes OUT/probe-<id>/")
	fl.IntVar(&f.parallel, "parallel", runtime.NumCPU(), "experiments run at once")
	fl.Float64Var(&f.timeScale, "time-scale", probe.DefaultTimeScale, "multiplies every real-world duration of the battery")
	fl.Int64Var(&f.seed, "seed", 1, "seed of every generated experiment")
	fl.DurationVar(&f.maxAway, "max-away", 10*time.Minute, "the longest disconnect (real-world) the retention and TTL searches try")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "no progress lines")
	cmd.AddCommand(newProbeHelperCmd())
	return cmd
}

// newProbeHelperCmd runs the probe's helper programs (see package probe).
func newProbeHelperCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "helper MODE",
		Short:              "A helper program of the probe's generated experiments (hold, forge)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := probe.RunHelper(args, cmd.ErrOrStderr()); code != 0 {
				return withCode(code, fmt.Errorf("probe helper %s failed", strings.Join(args, " ")))
			}
			return nil
		},
	}
}

func (f *probeFlags) options(cmd *cobra.Command) (probe.Options, error) {
	o := probe.Options{Protocols: f.protocols, Only: f.only, TimeScale: f.timeScale, Seed: f.seed, Parallel: f.parallel,
		Limits: probe.Limits{MaxAway: f.maxAway}}
	if f.timeScale <= 0 || f.timeScale > 10 {
		return o, fmt.Errorf("--time-scale: must be greater than 0 and at most 10, got %v", f.timeScale)
	}
	if f.parallel < 1 {
		return o, fmt.Errorf("--parallel: must be at least 1, got %d", f.parallel)
	}
	given := 0
	for _, s := range []string{f.serverCommand, f.serverURL, f.server, f.clientCommand, f.client} {
		if s != "" {
			given++
		}
	}
	if given != 1 {
		return o, errors.New("give exactly one of --server-command, --server-url, --server, --client-command, --client")
	}
	if f.clientCommand != "" || f.client != "" {
		spec, err := f.clientSpec()
		if err != nil {
			return o, err
		}
		o.Client = &probe.Client{Spec: spec}
		return o, nil
	}
	srv, err := f.serverSpec(cmd)
	if err != nil {
		return o, err
	}
	o.Server = srv
	return o, nil
}

func (f *probeFlags) clientSpec() (map[string]any, error) {
	if f.clientCommand != "" {
		argv, err := shlex.Split(f.clientCommand)
		if err != nil || len(argv) == 0 {
			return nil, fmt.Errorf("--client-command: cannot split %q into a program and its arguments", f.clientCommand)
		}
		return map[string]any{"target": targets.Command, "command": argv}, nil
	}
	return mapping("--client", f.client)
}

func (f *probeFlags) serverSpec(cmd *cobra.Command) (probe.Server, error) {
	var s probe.Server
	switch {
	case f.serverCommand != "":
		argv, err := shlex.Split(f.serverCommand)
		if err != nil || len(argv) == 0 {
			return s, fmt.Errorf("--server-command: cannot split %q into a program and its arguments", f.serverCommand)
		}
		s.Spec = map[string]any{"target": targets.Command, "command": argv}
	case f.serverURL != "":
		u, err := url.Parse(f.serverURL)
		if err != nil || u.Scheme != "http" || u.Path != "/mcp" {
			return s, fmt.Errorf("--server-url: want http://127.0.0.1:PORT/mcp (the endpoint must be /mcp), got %q", f.serverURL)
		}
		if ip := net.ParseIP(u.Hostname()); (ip == nil || !ip.IsLoopback()) && u.Hostname() != "localhost" {
			return s, fmt.Errorf("--server-url: the server must be on loopback, got host %q", u.Hostname())
		}
		s.URL, s.Spec = f.serverURL, map[string]any{"target": targets.Command}
	default:
		spec, err := mapping("--server", f.server)
		if err != nil {
			return s, err
		}
		s.Spec = spec
	}
	return s, f.tools(cmd.Context(), &s)
}

// tools chooses the stream and effect calls.
func (f *probeFlags) tools(ctx context.Context, s *probe.Server) error {
	own := s.Target() == targets.Reference || s.Target() == targets.GoSDK || s.Target() == targets.MCPGo
	stream := lab.Call{Tool: f.tool}
	if f.tool == "" && !own {
		if f.effectTool != "" {
			return errors.New("--effect-tool: name the stream tool too (--tool), or neither and let the probe choose both from tools/list")
		}
		return probe.ChooseTools(ctx, s)
	}
	if f.tool == "" {
		stream = lab.Call{Tool: mcp.ToolChatty, Args: map[string]any{"events": 1200, "interval_ms": 5}, Duration: "2m"}
		s.TimeStream = &lab.Call{Tool: mcp.ToolChatty, Args: map[string]any{"events": 60, "interval_ms": 10}, Duration: "12s"}
		s.Chosen = "stream tools: chatty with 1200 events 5 ms apart (events), and 60 events 10 ms apart (time); effect tool: charge of 20 s (chaosrun's own tools)"
	} else if err := jsonArgs("--args", f.args, &stream); err != nil {
		return err
	}
	effect := lab.Call{Tool: f.effectTool}
	switch {
	case f.effectTool != "":
		if err := jsonArgs("--effect-args", f.effectArgs, &effect); err != nil {
			return err
		}
	case own && f.tool == "":
		effect = lab.Call{Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: "20s"}
	default:
		effect = stream
	}
	if effect.Duration == "" {
		effect.Duration = "20s"
	}
	s.Stream, s.Effect = stream, effect
	return nil
}

func jsonArgs(flag, raw string, c *lab.Call) error {
	if raw == "" {
		return nil
	}
	if err := json.Unmarshal([]byte(raw), &c.Args); err != nil {
		return fmt.Errorf("%s: not a JSON object: %v", flag, err)
	}
	return nil
}

// mapping reads an inline YAML mapping or @FILE.
func mapping(flag, raw string) (map[string]any, error) {
	src := []byte(raw)
	if path, ok := strings.CutPrefix(raw, "@"); ok {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		src = b
	}
	var m map[string]any
	if err := yaml.Unmarshal(src, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: want a YAML mapping such as '{target: reference, retention_events: 50}', got %q", flag, raw)
	}
	return m, nil
}

func (f *probeFlags) run(cmd *cobra.Command) error {
	o, err := f.options(cmd)
	if err != nil {
		return withCode(exitInvalid, err)
	}
	var baseline *probe.Baseline
	if f.baseline != "" {
		if baseline, err = probe.LoadBaseline(f.baseline); err != nil {
			return withCode(exitInvalid, err)
		}
	}
	factory, err := harness.LocalRuntime()
	if err != nil {
		return withCode(exitHarness, err)
	}
	o.NewRuntime, o.RuntimeName = factory, "local"
	o.Out = filepath.Join(f.out, "probe-"+time.Now().UTC().Format("20060102-150405"))
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return withCode(exitHarness, err)
	}
	if !f.quiet {
		o.Progress = cmd.ErrOrStderr()
	}
	est := o.Estimate()
	fmt.Fprintf(cmd.ErrOrStderr(), "chaosrun probe: %s; at most %d experiments, %d at a time: about %s, at most %s\n",
		est.About, est.MaxExperiments, max(f.parallel, 1), est.Typical.Round(time.Second), est.Longest.Round(time.Second))
	rep, err := probe.Run(cmd.Context(), o)
	if errors.Is(err, probe.ErrInput) {
		return withCode(exitInvalid, err)
	}
	if err != nil {
		return withCode(exitHarness, err)
	}
	rep.WriteTable(cmd.OutOrStdout())
	fmt.Fprintf(cmd.OutOrStdout(), "\nprobe: %s\n", rep.Dir)
	if baseline != nil {
		res := rep.Evaluate(baseline)
		for _, e := range res.Expected {
			fmt.Fprintf(cmd.OutOrStdout(), "  ~ expected failure: %s\n", e)
		}
		for _, e := range res.Stale {
			fmt.Fprintf(cmd.OutOrStdout(), "  ✓ stale baseline entry (now passing, remove it): %s\n", e)
		}
		for _, e := range res.Unexpected {
			fmt.Fprintf(cmd.OutOrStdout(), "  ✗ unexpected failure (not in the baseline): %s\n", e)
		}
		if !res.OK() {
			return withCode(exitNotMet, errors.New("the probe does not match its baseline"))
		}
		return nil
	}
	if fails := rep.Failures(); len(fails) > 0 {
		return withCode(exitNotMet, fmt.Errorf("%d check(s) failed: %s", len(fails), strings.Join(fails, ", ")))
	}
	return nil
}

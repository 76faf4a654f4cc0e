package harness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/internal/daemon"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
)

// ProxyName is the Toxiproxy proxy between client and server.
const ProxyName = "mcp"

// UsageFile holds, where the runtime measures its agents (the local runtime
// does), each agent incarnation's peak memory and CPU time: a JSON array of
// agent.Usage.
const UsageFile = "usage.json"

// experiment is one run of one plan.
type experiment struct {
	plan      *spec.Plan
	dir       string
	rt        agent.Runtime
	clock     runclock.Clock
	progress  func(format string, args ...any)
	verbose   bool
	procs     processes         // the agents by role, as the fault injector sees them too
	observer  proxy.Group       // the proxy agents' taps and triggers, one agent's or several
	proxies   int               // how many proxy agents carry the clients (proxyAgents)
	balancer  *balancer.Process // between the server edge and the server; nil for none
	replicas  []agent.Process   // the server's replicas, in order; replicas[0] is "server" too
	redis     *daemon.Process   // the replicas' shared store; nil for none
	endpoints []string          // the MCP endpoint through each proxy agent, as the client sees it
	partial   string            // why the records are incomplete (see salvage); empty when whole
}

// run executes the experiment and judges it. A returned error is a harness
// failure; the verdict and whether it met the expectation are in the result.
func (e *experiment) run(ctx context.Context) (*results.ExperimentResult, error) {
	ctx, cancel := context.WithTimeout(ctx, e.plan.Deadline)
	defer cancel()
	defer e.closeRuntime()
	defer func() {
		if e.observer != nil {
			_ = e.observer.Close()
		}
	}()
	res, err := e.steps(ctx)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		return e.salvage(err)
	}
	return res, err
}

func (e *experiment) steps(ctx context.Context) (*results.ExperimentResult, error) {
	if err := e.prepare(); err != nil {
		return nil, err
	}
	// What the runtime cannot run fails here, before an agent starts, as
	// `chaosrun run` refuses it before the run (with where it would run).
	if err := e.plan.Experiment.CheckRuntime(e.rt.Capabilities(), nil); err != nil {
		return nil, err
	}
	n, err := proxyAgents(e.rt, e.plan)
	if err != nil {
		return nil, err
	}
	e.proxies = n
	if err := e.startTopology(ctx); err != nil {
		return nil, err
	}
	stopSampling := e.sampleServers(ctx)
	defer stopSampling() // on the error paths; the way through checks its error below
	wall, err := e.drive(ctx)
	if err != nil {
		return nil, err
	}
	if err := stopSampling(); err != nil {
		return nil, fmt.Errorf("sample the server: %w", err)
	}
	if err := e.collect(ctx); err != nil {
		return nil, err
	}
	return e.judge(wall)
}

func (e *experiment) prepare() error {
	for _, d := range []string{e.dir, e.logDir(), e.stateDir("")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(e.dir, results.ExperimentFile), e.plan.Experiment.Source, 0o644); err != nil {
		return err
	}
	// The workload as the clients get it: the checker reads its ops (how
	// to tell operations apart, which are idempotent) back from it.
	return results.WriteJSON(filepath.Join(e.dir, check.WorkloadFile), e.plan.Template)
}

func (e *experiment) logDir() string { return filepath.Join(e.dir, "logs") }

func (e *experiment) stateDir(role string) string { return filepath.Join(e.dir, "state", role) }

// start starts the agent of spec, which gives its role, port, arguments
// and ledger; start adds the run's clock and the agent's folders.
func (e *experiment) start(ctx context.Context, spec agent.Spec) (agent.Process, error) {
	return e.startAs(ctx, spec.Role, spec)
}

// startAs starts an agent under a name of its own (a server replica's
// "server-2"), which names its folders, its log and the agent as faults
// address it.
func (e *experiment) startAs(ctx context.Context, name string, spec agent.Spec) (agent.Process, error) {
	spec.Clock = e.clock
	if e.verbose {
		spec.Args = append(spec.Args, "-v")
	}
	spec.StateDir, spec.LogPath = e.stateDir(name), filepath.Join(e.logDir(), name+".log")
	spec.Serves = spec.Role != agent.RoleClient
	p, err := e.rt.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	if e.verbose && spec.Serves {
		e.progress("%s started: %s, log %s", name, p.URL(), spec.LogPath)
	} else if e.verbose {
		e.progress("%s started, log %s", name, spec.LogPath)
	}
	e.procs.add(name, p)
	return p, nil
}

// drive runs the fault schedule alongside the client and returns the
// workload's wall time: from its start until every call has an outcome and
// the server has no tool left running.
func (e *experiment) drive(ctx context.Context) (time.Duration, error) {
	flog, err := faults.CreateLog(filepath.Join(e.dir, check.FaultsFile))
	if err != nil {
		return 0, err
	}
	defer flog.Close()
	injCtx, stopFaults := context.WithCancel(ctx)
	defer stopFaults()
	due := newDueTracker(e.plan.Faults)
	kills := &serverKills{}
	ready := make(chan struct{})
	env := faults.Env{
		Clock: e.clock, WorkloadStart: e.clock.Now(), Toxiproxies: e.toxiproxies(),
		Proxy: ProxyName, Processes: &e.procs, ControlURL: e.procs.of(agent.RoleServer).URL(), Log: flog,
		Progress: func(ev faults.Event) { due.seen(ev); kills.seen(ev); e.progress("%s", describe(ev)) },
		Triggers: e.observer, Edges: e.observer, Ready: func() { close(ready) },
	}
	faultsDone := make(chan error, 1)
	go func() { faultsDone <- faults.Run(injCtx, env, e.plan.Faults) }()
	// On every way out the injector is stopped and waited for, so no
	// injection outlives the experiment (a restart after the runtime closed)
	// and none writes to a closed fault log.
	faultsOver := false
	defer func() {
		if !faultsOver {
			stopFaults()
			<-faultsDone
		}
	}()
	// The reset marker and the triggers, then the faults due at the
	// workload's start, are in place before the client opens its first
	// connection: a fast client's call would otherwise pass its trigger by.
	select {
	case <-ready:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if err := due.wait(ctx); err != nil {
		return 0, fmt.Errorf("faults due at start: %w", err)
	}
	e.progress("workload: %d client(s), %s client, %s server", e.plan.Template.Clients, e.plan.Client.Target, e.plan.Server.Target)
	cs, err := clientSpec(e.plan, e.endpoints)
	if err != nil {
		return 0, err
	}
	client, err := e.start(ctx, cs)
	if err != nil {
		return 0, err
	}
	code, err := client.Wait(ctx)
	clientExit := time.Now()
	switch {
	case err != nil:
		return 0, fmt.Errorf("client did not finish within the deadline of %s: %w", e.plan.Deadline, err)
	case code != 0:
		return 0, fmt.Errorf("client exited with code %d (see %s)", code, filepath.Join(e.logDir(), "client.log"))
	}
	stopFaults()
	faultsOver = true
	if err := <-faultsDone; err != nil && !errors.Is(err, faults.ErrInjection) {
		return 0, err
	}
	if b := e.plan.Balancer; b != nil && b.Kind != balancer.Service {
		// A Service has no timeouts of its own to stand as a condition.
		if err := flog.Write(balancerEntry(b, len(e.plan.Faults), env.WorkloadStart, e.clock.Now())); err != nil {
			return 0, err
		}
	}
	e.progress("workload done; waiting for the server's tools to settle")
	if err := e.settle(ctx, clientExit, kills.latest()); err != nil {
		return 0, err
	}
	return e.clock.Now() - env.WorkloadStart, nil
}

// settle waits until no tool runs on the server (see settler), bounded by
// the experiment's deadline through ctx. killed is when the fault injector
// last restarted or crashed the server (0 if never).
func (e *experiment) settle(ctx context.Context, clientExit time.Time, killed time.Duration) error {
	var status []string
	for _, r := range e.replicas {
		status = append(status, r.URL()+"/control/status")
	}
	s := &settler{
		status:   status,
		ledger:   sideeffects.NewClient(e.procs.of(agent.RoleLedger).URL()),
		longest:  longestCall(e.plan),
		killed:   killed,
		progress: e.progress,
		hc:       &http.Client{Timeout: 5 * time.Second},
	}
	return s.wait(ctx, clientExit)
}

// longestCall is the longest scaled call duration of the plan.
func longestCall(p *spec.Plan) time.Duration {
	var d time.Duration
	for _, call := range p.Template.Calls {
		d = max(d, call.Duration)
	}
	return d
}

// collect stops the agents and gathers history, ledger and logs. The
// client stops first: after a finished workload it has exited already, and
// in an interrupted one (see salvage) it must not go on recording the
// server's end as its own failures.
func (e *experiment) collect(ctx context.Context) error {
	if err := e.procs.of(agent.RoleClient).Stop(ctx, true); err != nil {
		return fmt.Errorf("stop client: %w", err)
	}
	for k, r := range e.replicas {
		if err := r.Stop(ctx, true); err != nil {
			return fmt.Errorf("stop %s: %w", replicaName(k+1, len(e.replicas)), err)
		}
	}
	recs, err := sideeffects.NewClient(e.procs.of(agent.RoleLedger).URL()).Records(ctx)
	if err != nil {
		return fmt.Errorf("export ledger: %w", err)
	}
	if err := sideeffects.SaveLedger(filepath.Join(e.dir, check.LedgerFile), recs); err != nil {
		return err
	}
	for _, role := range append(e.proxyNames(), agent.RoleLedger) {
		if err := e.procs.of(role).Stop(ctx, true); err != nil {
			return fmt.Errorf("stop %s: %w", role, err)
		}
	}
	if err := e.saveUsage(); err != nil {
		return err
	}
	if err := e.collectWire(ctx); err != nil { // written as the proxy agents stopped
		return err
	}
	// The client's history, or how a program of the user's ended (it
	// writes no history: the wire is its account).
	return e.moveOut(ctx, agent.RoleClient, clientRecords(e.plan))
}

// saveUsage writes what each stopped agent used, if its runtime measured it.
func (e *experiment) saveUsage() error {
	names := []string{agent.RoleLedger}
	for k := range e.replicas {
		names = append(names, replicaName(k+1, len(e.replicas)))
	}
	names = append(append(names, e.proxyNames()...), agent.RoleClient)
	var all []agent.Usage
	for _, name := range names {
		m, ok := e.procs.of(name).(agent.Measured)
		if !ok {
			continue
		}
		for _, u := range m.Usage() {
			u.Agent = name
			all = append(all, u)
		}
	}
	if all == nil {
		return nil
	}
	return results.WriteJSON(filepath.Join(e.dir, UsageFile), all)
}

// closeRuntime closes the runtime and drops the copy of the client's
// history a runtime may mirror into its state folder again on closing (the
// docker runtime does), once the experiment's folder holds it.
func (e *experiment) closeRuntime() {
	_ = e.rt.Close()
	if e.balancer != nil {
		_ = e.balancer.Close()
	}
	if e.redis != nil {
		_ = e.redis.Close()
	}
	if _, err := os.Stat(filepath.Join(e.dir, check.HistoryFile)); err == nil {
		_ = os.Remove(filepath.Join(e.stateDir(agent.RoleClient), check.HistoryFile))
	}
}

// moveOut moves a file a stopped agent wrote in its state folder (which
// every runtime fills on the runner's side once the agent stopped) into the
// experiment's folder, so it is kept once; a runtime that left no copy
// there has it copied out.
func (e *experiment) moveOut(ctx context.Context, role, name string) error {
	return e.moveOutAs(ctx, role, name, name)
}

// moveOutAs is moveOut into the result folder under another name.
func (e *experiment) moveOutAs(ctx context.Context, role, name, as string) error {
	dst := filepath.Join(e.dir, as)
	err := os.Rename(filepath.Join(e.stateDir(role), name), dst)
	if errors.Is(err, fs.ErrNotExist) {
		err = e.procs.of(role).CopyOut(ctx, name, dst)
	}
	if errors.Is(err, fs.ErrNotExist) && e.partial != "" {
		err = os.WriteFile(dst, nil, 0o644) // interrupted before the agent wrote a record
	}
	if err != nil {
		return fmt.Errorf("%s of %s: %w", name, role, err)
	}
	return nil
}

func (e *experiment) judge(wall time.Duration) (*results.ExperimentResult, error) {
	if err := check.SaveTimings(e.dir, wall, e.plan.Scheduled); err != nil {
		return nil, err
	}
	in, err := check.LoadRun(e.dir)
	if err != nil {
		return nil, err
	}
	v := check.Judge(in)
	if err := check.SaveVerdict(filepath.Join(e.dir, check.VerdictFile), v); err != nil {
		return nil, err
	}
	met, reasons := e.plan.Expect.Match(v)
	res := &results.ExperimentResult{Name: e.plan.Experiment.Name, Dir: e.dir, Verdict: &v, Expected: e.plan.Expect.Verdict,
		Met: met, Reasons: reasons, Wall: wall, Scheduled: e.plan.Scheduled}
	if e.partial != "" {
		results.MarkPartial(res, e.partial)
	}
	return res, results.WriteTimeline(res, in)
}

func describe(ev faults.Event) string {
	s := fmt.Sprintf("fault %s #%d %s at %.2fs", ev.Kind, ev.Index, ev.Phase, ev.At.Seconds())
	if ev.Target != "" {
		s += " on " + ev.Target
	}
	if ev.Detail != "" && ev.Phase != faults.PhaseHealed { // a heal undoes what the injection line said
		s += ": " + ev.Detail
	}
	if ev.Err != nil {
		s += ": " + ev.Err.Error()
	}
	return strings.TrimSpace(s)
}

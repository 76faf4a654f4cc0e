package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/redisserver"
	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
)

// proxyPort is the client edge's listen port inside a container network.
const proxyPort = 8666

// ledgerState is the ledger agent's store, in its state folder.
const ledgerState = "ledger.log"

// processes lets the fault injector restart and pause agents by role. The
// runner adds the client while the injector already runs (faults due at the
// start are in place before the client starts), so it is locked. The zero
// value is empty and ready.
type processes struct {
	mu      sync.Mutex
	procs   map[string]agent.Process
	daemons map[string]faultable // processes the runner started that are not agents (redis)
}

// faultable is what process faults need of a process: an agent, or a
// daemon such as redis-server.
type faultable interface {
	Restart(ctx context.Context, graceful bool) error
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	Stop(ctx context.Context, graceful bool) error
	Start(ctx context.Context) error
}

// addDaemon makes a daemon a target of process faults under name.
func (p *processes) addDaemon(name string, d faultable) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.daemons == nil {
		p.daemons = map[string]faultable{}
	}
	p.daemons[name] = d
}

func (p *processes) add(name string, proc agent.Process) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.procs == nil {
		p.procs = map[string]agent.Process{}
	}
	p.procs[name] = proc
}

// of returns the agent of role, nil if it has not started.
func (p *processes) of(role string) agent.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.procs[role]
}

func (p *processes) get(role string) (faultable, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if proc, ok := p.procs[role]; ok {
		return proc, nil
	}
	if d, ok := p.daemons[role]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("%w: %s", agent.ErrNotRunning, role)
}

func (p *processes) Restart(ctx context.Context, role string, graceful bool) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Restart(ctx, graceful)
}

func (p *processes) Pause(ctx context.Context, role string) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Pause(ctx)
}

func (p *processes) Resume(ctx context.Context, role string) error {
	proc, err := p.get(role)
	if err != nil {
		return err
	}
	return proc.Resume(ctx)
}

// Kill and Start make processes a faults.Stopper: a crash that keeps a
// replica down.
func (p *processes) Kill(ctx context.Context, name string) error {
	proc, err := p.get(name)
	if err != nil {
		return err
	}
	return proc.Stop(ctx, false)
}

func (p *processes) Start(ctx context.Context, name string) error {
	proc, err := p.get(name)
	if err != nil {
		return err
	}
	return proc.Start(ctx)
}

var _ faults.Stopper = (*processes)(nil)

// replicaName is the agent name of server replica k (1-based): "server"
// for the only one, so a one-replica run keeps its folders as ever, and
// "server-k" among several. Faults reach replica k as "server-k" either
// way, and "server" is replica 1.
func replicaName(k, replicas int) string {
	if replicas == 1 {
		return agent.RoleServer
	}
	return faults.AgentName(agent.RoleServer, k)
}

// startTopology starts ledger, server replicas, balancer and proxy, and
// creates the proxy between client and server (or balancer).
func (e *experiment) startTopology(ctx context.Context) error {
	e.progress("starting ledger, server and proxy")
	ledger, err := e.start(ctx, agent.Spec{Role: agent.RoleLedger, Port: 8080, Args: []string{"--store", ledgerState}})
	if err != nil {
		return err
	}
	var shared serverShared
	if wantsRedis(e.plan.Server.Options) {
		if shared.redis, err = e.startRedis(ctx); err != nil {
			return err
		}
	}
	n := max(e.plan.Server.Replicas, 1)
	var upstreams []string
	for k := 1; k <= n; k++ {
		name := replicaName(k, n)
		if shared.redis != "" {
			// The owner is the replica's name, which its restarts keep:
			// the calls it leaves pending are its own to resolve.
			shared.owner = faults.AgentName(agent.RoleServer, k)
		}
		spec, err := serverSpec(e.plan, "http://"+ledger.PeerAddr(), shared)
		if err != nil {
			return err
		}
		server, err := e.startAs(ctx, name, spec)
		if err != nil {
			return err
		}
		e.replicas = append(e.replicas, server)
		e.procs.add(faults.AgentName(agent.RoleServer, k), server)
		if k == 1 {
			e.procs.add(agent.RoleServer, server)
		}
		upstreams = append(upstreams, server.PeerAddr())
	}
	upstream := upstreams[0]
	switch b := e.plan.Balancer; {
	case b != nil && b.Kind == balancer.Service:
		if upstream, err = e.startService(ctx, b, n); err != nil {
			return err
		}
	case b != nil:
		if upstream, err = e.startBalancer(ctx, upstreams); err != nil {
			return err
		}
	}
	return e.startProxies(ctx, upstream)
}

// startService has the runtime balance the n server replicas itself (a
// Kubernetes Service over their pods) and returns the address the proxy
// reaches it at. CheckRuntime keeps kind service off runtimes that cannot
// (agent.Capabilities.Services).
func (e *experiment) startService(ctx context.Context, b *spec.BalancerPlan, n int) (string, error) {
	rt, ok := e.rt.(agent.Balancing)
	if !ok {
		return "", fmt.Errorf("balancer of kind %s: the %s runtime balances no agents itself", b.Kind, e.rt.Capabilities().Runtime)
	}
	e.progress("balancing %d replica(s) by a service (balance %s)", n, b.Balance)
	addr, err := rt.Balance(ctx, agent.Balance{Name: roleBalancer, Role: agent.RoleServer, Port: serverPort,
		Members: n, Affinity: b.Balance == balancer.Source})
	if err != nil {
		return "", err
	}
	if e.verbose {
		e.progress("service %s leads to %d replica(s)", addr, n)
	}
	return addr, nil
}

// startBalancer starts the plan's balancer in front of the replicas at
// upstreams, keeps its rendered configuration in the results and returns
// the address it listens on. It is a child process of the runner on
// loopback: CheckRuntime keeps it off runtimes whose agents cannot reach
// it (agent.Capabilities.Daemons).
func (e *experiment) startBalancer(ctx context.Context, upstreams []string) (string, error) {
	b := e.plan.Balancer
	e.progress("starting %s in front of %d replica(s)", b.Kind, len(upstreams))
	cfg := balancerConfig(b, upstreams, e.stateDir(roleBalancer))
	p, err := balancer.Start(ctx, cfg)
	if err != nil {
		return "", err
	}
	e.balancer = p
	e.procs.addDaemon(roleBalancer, p)
	if err := copyFile(p.ConfigPath(), filepath.Join(e.dir, cfg.FileName())); err != nil {
		return "", fmt.Errorf("keep the %s configuration: %w", b.Kind, err)
	}
	if e.verbose {
		e.progress("%s started: %s, configuration %s, log %s", b.Kind, p.Addr(), cfg.FileName(), p.LogPath())
	}
	return p.Addr(), nil
}

// serverPort is the port a server replica listens on in its own network
// namespace (a container, a pod), where a runtime has one.
const serverPort = 8080

// roleBalancer names the balancer's folders and the balancer as process
// faults reach it; it is not an agent.
const roleBalancer = "balancer"

// roleRedis is the name process faults reach redis-server by.
const roleRedis = "redis"

// wantsRedis says whether the server's options ask for a Redis server
// (a store the replicas share).
func wantsRedis(o targets.Options) bool {
	n, ok := o.(targets.Needer)
	if !ok {
		return false
	}
	for _, need := range n.Needs() {
		if need.What == targets.NeedRedis && need.Wanted {
			return true
		}
	}
	return false
}

// startRedis starts the redis-server the replicas share their journal in,
// with its data in the experiment's state folder, and returns its address.
// Like the balancer it is a child process of the runner on loopback.
func (e *experiment) startRedis(ctx context.Context) (string, error) {
	e.progress("starting redis-server (the replicas' shared event store)")
	p, err := redisserver.Start(ctx, e.stateDir("redis"))
	if err != nil {
		return "", err
	}
	e.redis = p
	e.procs.addDaemon(roleRedis, p)
	return p.Addr(), nil
}

func balancerConfig(b *spec.BalancerPlan, upstreams []string, dir string) balancer.Config {
	return balancer.Config{Kind: b.Kind, Upstreams: upstreams, Balance: b.Balance, Dir: dir,
		ProxyReadTimeout: b.ProxyReadTimeout, ProxyBuffering: b.ProxyBuffering, KeepaliveTimeout: b.KeepaliveTimeout,
		TimeoutServer: b.TimeoutServer, TimeoutClient: b.TimeoutClient, TimeoutTunnel: b.TimeoutTunnel}
}

// balancerEntry is the fault log's account of the balancer's timeouts: not
// an injection but a standing condition of the topology, in force from the
// workload's start to end. It is what cuts idle streams in an experiment
// that puts a real balancer where the idle_timeout toxic would be, so it
// counts for the fault_hit assumption like an injected fault.
func balancerEntry(b *spec.BalancerPlan, index int, from, to time.Duration) faults.Entry {
	params := map[string]any{"balance": b.Balance}
	var timeouts []string
	add := func(name string, d time.Duration) {
		if d > 0 {
			params[name] = d.String()
			timeouts = append(timeouts, name+" "+d.String())
		}
	}
	add("proxy_read_timeout", b.ProxyReadTimeout)
	add("keepalive_timeout", b.KeepaliveTimeout)
	add("timeout_server", b.TimeoutServer)
	add("timeout_client", b.TimeoutClient)
	add("timeout_tunnel", b.TimeoutTunnel)
	return faults.Entry{Index: index, Kind: faults.KindBalancer, Target: b.Kind, Params: params,
		StartUS: from.Microseconds(), EndUS: to.Microseconds(),
		Detail: "the balancer's own timeouts, in force for the whole workload: " + strings.Join(timeouts, ", ")}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// observe creates the fault proxy in the proxy agent, in front of
// upstream (the server, or the balancer in front of it), and has the
// agent observe it: the client connects to the agent's client edge, and
// the agent records both edges of every connection in its own byte path.
// It returns the MCP endpoint through the proxy agent, as the client
// reaches it.
func observe(ctx context.Context, upstream string, proxyAgent agent.Process, observer *proxy.Client) (string, error) {
	if _, err := toxiclient.NewClient(proxyAgent.URL()).CreateProxy(ProxyName, "127.0.0.1:0", upstream); err != nil {
		return "", fmt.Errorf("create proxy %s: %w", ProxyName, err)
	}
	listen := "0.0.0.0:" + strconv.Itoa(proxyPort)
	if onLoopback(proxyAgent.PeerAddr()) {
		listen = "127.0.0.1:0"
	}
	edge, err := observer.Observe(ctx, ProxyName, listen)
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(edge)
	if err != nil {
		return "", fmt.Errorf("client edge listens on %q: %w", edge, err)
	}
	host, _, _ := net.SplitHostPort(proxyAgent.PeerAddr())
	return "http://" + net.JoinHostPort(host, port) + "/mcp", nil
}

func onLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && net.ParseIP(host).IsLoopback()
}

// serverShared is what the runner gives each server replica besides the
// plan: the shared store's Redis server and the replica's name in it.
type serverShared struct{ redis, owner string }

// serverSpec is the server agent of a plan, writing to the ledger at
// ledgerURL, with its configuration; for a target that runs an image, the
// image the runtime runs in its place, which is given no configuration.
func serverSpec(p *spec.Plan, ledgerURL string, shared serverShared) (agent.Spec, error) {
	s := agent.Spec{Role: agent.RoleServer, Port: serverPort, LedgerURL: ledgerURL}
	if im, ok := p.Server.Options.(targets.Imaged); ok {
		s.Image = im.ContainerImage()
		return s, nil
	}
	if c, ok := p.Server.Options.(targets.Commanded); ok {
		s.Program, _ = c.Program()
	}
	cfg := roles.ServerConfig{Target: p.Server.Target, Tasks: p.Server.Tasks, Protocol: p.Client.Protocol, Options: p.Server.Options,
		Redis: shared.redis, Owner: shared.owner}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return s, fmt.Errorf("server configuration: %w", err)
	}
	s.Config = b
	return s, nil
}

// clientSpec is the client agent of a plan, with its configuration: the
// endpoint through each proxy agent (a command client takes one).
func clientSpec(p *spec.Plan, endpoints []string) (agent.Spec, error) {
	s := agent.Spec{Role: agent.RoleClient}
	if c, ok := p.Client.Options.(targets.Commanded); ok {
		s.Program, _ = c.Program()
	}
	cfg := roles.ClientConfig{Target: p.Client.Target, Protocol: p.Client.Protocol, Tasks: p.Client.Tasks, Options: p.Client.Options,
		Endpoints: endpoints, Seed: p.Seed, Workload: p.Template}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return s, fmt.Errorf("client configuration: %w", err)
	}
	s.Config = b
	return s, nil
}

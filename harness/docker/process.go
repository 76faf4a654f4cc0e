package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// logDrain bounds how long an exit waits for the agent's last output to
// reach its log file.
const logDrain = 5 * time.Second

// process is one agent's container across its restarts.
type process struct {
	rt    *Runtime
	spec  agent.Spec
	alias string // network alias, how peers reach it
	name  string // container name, how a runner in a container reaches it
	ctr   *testcontainers.DockerContainer

	mu      sync.Mutex
	url     string
	exited  chan struct{} // closed when the current incarnation has exited
	planned bool          // the harness ended the current incarnation itself
	paused  bool
	ownExit chan int // exit codes of incarnations that ended on their own
}

var _ agent.Process = (*process)(nil)

// create creates (without starting) the agent's container; its state volume
// is created with it, labelled like the container.
func (r *Runtime) create(ctx context.Context, spec agent.Spec, alias string) (*process, error) {
	name := r.base + "-" + alias
	labels := r.labels(map[string]string{LabelRole: spec.Role})
	byoImage, err := imageOf(spec)
	if err != nil {
		return nil, err
	}
	isImage := byoImage != ""
	if isImage {
		if err := r.checkImageTarget(ctx, byoImage); err != nil {
			return nil, err
		}
	}
	req := testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image:              r.image,
			Name:               name,
			Entrypoint:         []string{"/chaosrun"},
			Cmd:                agentArgs(spec),
			Env:                envMap(spec.Env),
			Labels:             labels,
			ExposedPorts:       exposedPorts(spec),
			Networks:           []string{r.network},
			NetworkAliases:     map[string][]string{r.network: {alias}},
			Tmpfs:              map[string]string{"/tmp": "rw,nosuid,nodev,size=64m"},
			HostConfigModifier: r.hostConfig(spec, name+"-state", !isImage),
		},
		Logger: tcLogger{r.log},
	}
	if isImage { // its own entrypoint and command, the contract's environment
		req.Image, req.Entrypoint, req.Cmd, req.Env = byoImage, nil, nil, imageEnv(spec)
	}
	c, err := testcontainers.GenericContainer(ctx, req)
	if err != nil {
		if c != nil {
			_ = c.Terminate(context.Background())
		}
		return nil, err
	}
	ctr, ok := c.(*testcontainers.DockerContainer)
	if !ok {
		_ = c.Terminate(context.Background())
		return nil, fmt.Errorf("unexpected container type %T", c)
	}
	return &process{rt: r, spec: spec, alias: alias, name: name, ctr: ctr, ownExit: make(chan int, 16)}, nil
}

// agentArgs is the command line after the /chaosrun entrypoint.
func agentArgs(spec agent.Spec) []string {
	return spec.CommandLine(StateDir, listenAddr(spec))
}

// listenAddr is where an agent listens inside its container.
func listenAddr(spec agent.Spec) string { return net.JoinHostPort("0.0.0.0", strconv.Itoa(spec.Port)) }

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}

func exposedPorts(spec agent.Spec) []string {
	if !spec.Serves {
		return nil
	}
	return []string{strconv.Itoa(spec.Port) + "/tcp"}
}

// hostConfig hardens the container (a read-only root when readOnly, no
// capabilities, no privilege gain), mounts the labelled state volume, and
// publishes a serving agent's port on the host's loopback only.
func (r *Runtime) hostConfig(spec agent.Spec, volume string, readOnly bool) func(*container.HostConfig) {
	return func(hc *container.HostConfig) {
		hc.ReadonlyRootfs = readOnly
		hc.CapDrop = []string{"ALL"}
		hc.SecurityOpt = []string{"no-new-privileges"}
		hc.Mounts = append(hc.Mounts, mount.Mount{
			Type:          mount.TypeVolume,
			Source:        volume,
			Target:        StateDir,
			VolumeOptions: &mount.VolumeOptions{Labels: r.labels(map[string]string{LabelRole: spec.Role})},
		})
		if !spec.Serves {
			return
		}
		hostPort := "0"
		if spec.Role == agent.RoleProxy && r.opts.ProxyAPIHostPort > 0 {
			hostPort = strconv.Itoa(r.opts.ProxyAPIHostPort)
		}
		port := network.MustParsePort(strconv.Itoa(spec.Port) + "/tcp")
		hc.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: hostPort}}}
	}
}

// run starts one incarnation: it attaches to the container's output before
// starting it (so nothing the agent prints is missed), registers for its
// exit, starts it, and waits for a serving agent's URL line.
func (p *process) run(ctx context.Context) error {
	logf, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithCancel(p.rt.bg)
	id := p.ctr.GetContainerID()
	att, err := p.rt.cli.ContainerAttach(ictx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		cancel()
		logf.Close()
		return fmt.Errorf("attach: %w", err)
	}
	context.AfterFunc(ictx, att.Close) // the stream is not tied to ictx by itself
	waited := p.rt.cli.ContainerWait(ictx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	exited, pumped := make(chan struct{}), make(chan struct{})
	urlc := make(chan string, 1)
	p.mu.Lock()
	p.exited, p.planned, p.paused = exited, false, false
	p.mu.Unlock()
	go p.pump(att, logf, urlc, pumped)
	go p.watch(waited, pumped, exited, cancel)
	if err := p.ctr.Start(ctx); err != nil {
		p.mu.Lock()
		p.planned = true
		p.mu.Unlock()
		cancel()
		return err
	}
	switch {
	case !p.spec.Serves:
		return nil
	case p.spec.Image != "":
		return p.awaitPort(ctx, exited)
	}
	return p.awaitURL(ctx, urlc, exited)
}

// pump copies the incarnation's output to the log file until the container
// exits; a serving agent's first stdout line goes to urlc instead.
func (p *process) pump(att client.ContainerAttachResult, logf *os.File, urlc chan<- string, done chan<- struct{}) {
	defer close(done)
	defer logf.Close()
	defer att.Close()
	var stdout io.Writer = logf
	if p.spec.Serves && p.spec.Image == "" { // an image target prints no URL
		stdout = &firstLine{line: urlc, rest: logf}
	}
	_, _ = stdcopy.StdCopy(stdout, logf, att.Reader)
}

// watch waits for the incarnation's exit, lets its output drain, and reports
// the exit code to Wait unless the harness caused the exit.
func (p *process) watch(waited client.ContainerWaitResult, pumped <-chan struct{}, exited chan struct{}, cancel context.CancelFunc) {
	code := -1
	select {
	case res := <-waited.Result:
		code = int(res.StatusCode)
	case <-waited.Error:
	}
	select {
	case <-pumped:
	case <-time.After(logDrain):
	}
	cancel()
	p.mu.Lock()
	planned := p.planned
	p.mu.Unlock()
	close(exited)
	if !planned {
		select {
		case p.ownExit <- code:
		default: // nobody has waited for 16 exits; drop the oldest news
		}
	}
}

func (p *process) awaitURL(ctx context.Context, urlc <-chan string, exited <-chan struct{}) error {
	timer := time.NewTimer(p.rt.readyTimeout)
	defer timer.Stop()
	select {
	case line := <-urlc:
		return p.setURL(ctx, line)
	case <-exited:
		return fmt.Errorf("agent exited before it was ready (see %s)", p.spec.LogPath)
	case <-timer.C:
		p.kill()
		return fmt.Errorf("agent printed no URL within %s (see %s)", p.rt.readyTimeout, p.spec.LogPath)
	case <-ctx.Done():
		p.kill()
		return ctx.Err()
	}
}

// setURL checks the printed URL against the port the agent was told to
// listen on and rewrites its host to one the runner reaches.
func (p *process) setURL(ctx context.Context, line string) error {
	u, err := url.Parse(line)
	if err != nil || u.Host == "" || u.Port() != strconv.Itoa(p.spec.Port) {
		p.kill()
		return fmt.Errorf("agent printed %q instead of its URL on port %d (see %s)", line, p.spec.Port, p.spec.LogPath)
	}
	host, err := p.reachableAddr(ctx)
	if err != nil {
		p.kill()
		return err
	}
	u.Host = host
	p.mu.Lock()
	p.url = u.String()
	p.mu.Unlock()
	return nil
}

// reachableAddr is host:port of the agent as the runner reaches it: the
// container's name on the shared network when the runner is in a container
// (a role alias could be ambiguous there: the runner joins every
// experiment's network), else the published port on 127.0.0.1, read again
// after every start because a restart may publish it on another port.
func (p *process) reachableAddr(ctx context.Context) (string, error) {
	port := strconv.Itoa(p.spec.Port)
	if p.rt.self != "" {
		return net.JoinHostPort(p.name, port), nil
	}
	res, err := p.rt.cli.ContainerInspect(ctx, p.ctr.GetContainerID(), client.ContainerInspectOptions{})
	if err != nil {
		return "", fmt.Errorf("inspect: %w", err)
	}
	if res.Container.NetworkSettings != nil {
		for _, b := range res.Container.NetworkSettings.Ports[network.MustParsePort(port+"/tcp")] {
			if b.HostPort != "" && b.HostPort != "0" {
				return net.JoinHostPort("127.0.0.1", b.HostPort), nil
			}
		}
	}
	return "", fmt.Errorf("port %s/tcp is not published", port)
}

func (p *process) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

func (p *process) PeerAddr() string {
	return net.JoinHostPort(p.alias, strconv.Itoa(p.spec.Port))
}

// running reports whether the current incarnation is up.
func (p *process) running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exited != nil && !isClosed(p.exited)
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// stop ends the current incarnation as a planned exit: docker stop (SIGTERM,
// SIGKILL after StopGrace) when graceful, else docker kill (SIGKILL).
func (p *process) stop(ctx context.Context, graceful bool) error {
	p.mu.Lock()
	p.planned = true
	exited, paused := p.exited, p.paused
	p.paused = false
	p.mu.Unlock()
	if exited == nil || isClosed(exited) {
		return nil
	}
	id := p.ctr.GetContainerID()
	if paused { // a frozen agent cannot handle SIGTERM
		_, _ = p.rt.cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{})
	}
	var err error
	if graceful {
		grace := StopGrace
		err = p.ctr.Stop(ctx, &grace)
	} else {
		_, err = p.rt.cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "KILL"})
	}
	wctx := ctx
	if err != nil { // it may have exited on its own meanwhile; else report err
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
	}
	select {
	case <-exited:
		return nil
	case <-wctx.Done():
		return errors.Join(err, fmt.Errorf("container %s did not exit: %w", p.name, wctx.Err()))
	}
}

func (p *process) kill() { _ = p.stop(context.Background(), false) }

func (p *process) Restart(ctx context.Context, graceful bool) error {
	if err := p.stop(ctx, graceful); err != nil {
		return fmt.Errorf("restart %s: %w", p.spec.Role, err)
	}
	if err := p.run(ctx); err != nil {
		return fmt.Errorf("restart %s: %w", p.spec.Role, err)
	}
	return nil
}

func (p *process) Pause(ctx context.Context) error {
	if !p.running() {
		return agent.ErrNotRunning
	}
	if _, err := p.rt.cli.ContainerPause(ctx, p.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s: %w", p.spec.Role, err)
	}
	p.mu.Lock()
	p.paused = true
	p.mu.Unlock()
	return nil
}

func (p *process) Resume(ctx context.Context) error {
	if !p.running() {
		return agent.ErrNotRunning
	}
	if _, err := p.rt.cli.ContainerUnpause(ctx, p.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume %s: %w", p.spec.Role, err)
	}
	p.mu.Lock()
	p.paused = false
	p.mu.Unlock()
	return nil
}

// Stop ends the agent and copies its state folder to Spec.StateDir.
func (p *process) Stop(ctx context.Context, graceful bool) error {
	if err := p.stop(ctx, graceful); err != nil {
		return fmt.Errorf("stop %s: %w", p.spec.Role, err)
	}
	return p.mirrorState(ctx)
}

// finish is Close's part for one agent: kill it, then keep its state.
func (p *process) finish(ctx context.Context) error {
	if err := p.stop(ctx, false); err != nil {
		return fmt.Errorf("stop %s: %w", p.spec.Role, err)
	}
	return p.mirrorState(ctx)
}

func (p *process) Wait(ctx context.Context) (int, error) {
	select {
	case code := <-p.ownExit:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

package docker

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// process is one agent's container across its restarts, each start of the
// container an incarnation (incarnation.go); the Lifecycle keeps the books
// of restarts and exits.
type process struct {
	*agent.Lifecycle
	rt    *Runtime
	spec  agent.Spec
	alias string // network alias, how peers reach it
	name  string // container name, how a runner in a container reaches it
	ctr   *testcontainers.DockerContainer

	mu  sync.Mutex
	url string
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
	prog, err := programOf(spec)
	if err != nil {
		return nil, err
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
			HostConfigModifier: r.hostConfig(spec, name+"-state", !isImage, prog, name+"-program"),
		},
		Logger: tcLogger{r.log},
	}
	if prog != nil {
		if prog.workDir != "" {
			req.ConfigModifier = func(c *container.Config) { c.WorkingDir = prog.workDir }
		}
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
	if prog != nil {
		if err := prog.copyInto(ctx, r.cli, ctr.GetContainerID()); err != nil {
			_ = c.Terminate(context.Background())
			return nil, err
		}
	}
	if spec.Config != nil && !isImage {
		if err := copyConfig(ctx, r.cli, ctr.GetContainerID(), spec.Config); err != nil {
			_ = c.Terminate(context.Background())
			return nil, err
		}
	}
	p := &process{rt: r, spec: spec, alias: alias, name: name, ctr: ctr}
	p.Lifecycle = agent.NewLifecycle(spec.Role, p.launch)
	return p, nil
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
func (r *Runtime) hostConfig(spec agent.Spec, volume string, readOnly bool, prog *program, progVolume string) func(*container.HostConfig) {
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
		if prog != nil {
			hc.Mounts = append(hc.Mounts, prog.mount(progVolume, r.labels(map[string]string{LabelRole: spec.Role})))
		}
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

// setURL checks the printed URL against the port the agent was told to
// listen on and rewrites its host to one the runner reaches.
func (p *process) setURL(ctx context.Context, line string) error {
	u, err := url.Parse(line)
	if err != nil || u.Host == "" || u.Port() != strconv.Itoa(p.spec.Port) {
		return fmt.Errorf("agent printed %q instead of its URL on port %d (see %s)", line, p.spec.Port, p.spec.LogPath)
	}
	host, err := p.reachableAddr(ctx)
	if err != nil {
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

// Stop ends the agent and copies its state folder to Spec.StateDir.
func (p *process) Stop(ctx context.Context, graceful bool) error {
	if err := p.Lifecycle.Stop(ctx, graceful); err != nil {
		return fmt.Errorf("stop %s: %w", p.spec.Role, err)
	}
	return p.mirrorState(ctx)
}

// finish is Close's part for one agent: kill it for good, then keep its
// state.
func (p *process) finish(ctx context.Context) error {
	if err := p.Close(ctx); err != nil {
		return fmt.Errorf("stop %s: %w", p.spec.Role, err)
	}
	return p.mirrorState(ctx)
}

package kube

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// process is one agent across its pods, each pod an incarnation
// (incarnation.go); the Lifecycle keeps the books of restarts and exits.
type process struct {
	*agent.Lifecycle
	rt    *Runtime
	spec  agent.Spec
	alias string          // the agent's name in the namespace: its Service's, its folder's
	svc   *corev1.Service // nil for an agent that serves nothing
	fwd   *forward        // the runner's way in; nil for an agent that serves nothing
	pod   func(name string) *corev1.Pod

	mu     sync.Mutex
	starts int
	url    string
	last   *incarnation
	// unmirrored: a pod ran since the folder was last copied to
	// Spec.StateDir, so Close copies it again; a stopped agent's copy is
	// not made twice (the runner may have moved files out of it).
	unmirrored bool
}

var _ agent.Process = (*process)(nil)

func (r *Runtime) newProcess(spec agent.Spec, alias string, svc *corev1.Service) *process {
	p := &process{rt: r, spec: spec, alias: alias, svc: svc}
	p.pod = func(name string) *corev1.Pod { return r.tmpl.agentPod(name, alias, spec) }
	if spec.Serves {
		p.fwd = newForward(r, spec.Port)
	}
	p.Lifecycle = agent.NewLifecycle(spec.Role, p.launch)
	return p
}

// nextPodName names the agent's next pod: alias-1, alias-2, ...
func (p *process) nextPodName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.starts++
	p.unmirrored = true
	return p.alias + "-" + strconv.Itoa(p.starts)
}

// node is the node the agent's last pod ran on.
func (p *process) node() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.last == nil {
		return ""
	}
	return p.last.nodeName()
}

func (p *process) URL() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.url
}

// PeerAddr is the agent's Service: its cluster IP, which outlives its pods.
func (p *process) PeerAddr() string {
	if p.svc == nil {
		return ""
	}
	return net.JoinHostPort(p.svc.Spec.ClusterIP, strconv.Itoa(p.spec.Port))
}

// Stop ends the agent and copies its folder to Spec.StateDir.
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
	if p.fwd != nil {
		p.fwd.close()
	}
	p.mu.Lock()
	again := p.unmirrored
	p.mu.Unlock()
	if !again {
		return nil
	}
	return p.mirrorState(ctx)
}

// CopyOut copies the file rel of the agent's folder to dst, while the
// agent runs or after.
func (p *process) CopyOut(ctx context.Context, rel, dst string) error {
	if err := p.rt.keepers.CopyFile(ctx, p.alias+"/"+rel, dst); err != nil {
		return fmt.Errorf("copy out %s: %w", rel, err)
	}
	return nil
}

// mirrorState copies the agent's whole folder into Spec.StateDir.
func (p *process) mirrorState(ctx context.Context) error {
	if p.spec.StateDir == "" {
		return nil
	}
	if err := p.rt.keepers.CopyDir(ctx, p.alias, p.spec.StateDir); err != nil {
		return fmt.Errorf("copy state of %s: %w", p.spec.Role, err)
	}
	p.mu.Lock()
	if _, _, err := p.Running(); err != nil { // stopped: this copy is the last
		p.unmirrored = false
	}
	p.mu.Unlock()
	return nil
}

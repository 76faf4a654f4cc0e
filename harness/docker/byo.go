package docker

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/targets/byo"
)

// A bring-your-own server image (server.target image) runs in the server
// agent's place. The runner asks for one with a server Spec whose Image
// names it; the runtime then starts that image with its own entrypoint,
// command and user, and hands it the contract of targets/byo through the
// environment (byo.Env): the listen address 0.0.0.0:<Spec.Port>, the ledger
// Spec.LedgerURL, the clock Spec.Clock, and StateDir, the labelled state
// volume, as the state folder.
//
// Everything else is as for an agent: network alias, labels, the state
// volume, the published port, cleanup, and restart, crash and pause. Two
// things differ. The image prints no URL, so the runtime waits until its
// port answers HTTP (any status). And its root filesystem is writable (the
// container's own layer, kept across restarts and removed with the
// container): an image not built for a read-only root would fail in ways
// that say nothing about MCP. Capabilities stay dropped and privileges
// cannot be gained. StateDir is writable by the image's user only if the
// image holds that folder owned by its user, or runs as root: a new volume
// takes the ownership of the folder it is mounted on.

// portPoll is how often an image target's port is probed while it starts.
const portPoll = 50 * time.Millisecond

// imageOf returns the image a spec asks to run in the agent's place, "" for
// none; only the server can be replaced by an image.
func imageOf(spec agent.Spec) (string, error) {
	if spec.Image != "" && spec.Role != agent.RoleServer {
		return "", fmt.Errorf("image %s: only the server agent can be an image, not the %s", spec.Image, spec.Role)
	}
	return spec.Image, nil
}

// checkImageTarget makes sure the daemon holds the image. It is never
// pulled: no registry may be reachable, and a pull would only retry until
// the experiment's deadline.
func (r *Runtime) checkImageTarget(ctx context.Context, image string) error {
	if _, err := r.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("server.image %s: not on the Docker daemon (chaosrun does not pull images: build or load it first)", image)
		}
		return fmt.Errorf("server.image %s: %w", image, err)
	}
	return nil
}

// imageEnv is the environment of an image target: the contract, then
// Spec.Env.
func imageEnv(spec agent.Spec) map[string]string {
	env := envMap(byo.Env{ListenAddr: listenAddr(spec), LedgerURL: spec.LedgerURL, Clock: spec.Clock, StateDir: StateDir}.Environ())
	maps.Copy(env, envMap(spec.Env))
	return env
}

// awaitPort waits until an image target's port answers an HTTP request,
// then sets the URL. Through a published port the Docker proxy accepts
// connections before anything listens behind it, so a TCP connect alone
// proves nothing: an HTTP answer, whatever its status, does.
func (in *incarnation) awaitPort(ctx context.Context) error {
	p := in.p
	deadline := time.NewTimer(p.rt.readyTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(portPoll)
	defer tick.Stop()
	hc := &http.Client{Timeout: time.Second}
	for {
		addr, err := p.reachableAddr(ctx)
		if err == nil && answers(ctx, hc, "http://"+addr+"/mcp") {
			p.mu.Lock()
			p.url = "http://" + addr
			p.mu.Unlock()
			return nil
		}
		select {
		case <-in.exited:
			return fmt.Errorf("image %s exited before its port %d answered (see %s)", p.spec.Image, p.spec.Port, p.spec.LogPath)
		case <-deadline.C:
			return fmt.Errorf("image %s: port %d did not answer HTTP within %s (see %s)", p.spec.Image, p.spec.Port, p.rt.readyTimeout, p.spec.LogPath)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// answers reports whether url answers an HTTP GET with any status.
func answers(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return true
}

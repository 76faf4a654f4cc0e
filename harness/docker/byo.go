package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// A bring-your-own server image (server.target image) runs in the server
// agent's place. The runner asks for one with a server Spec whose Args hold
// "--target image --image REF"; the runtime then starts REF with its own
// entrypoint, command and user, and hands it the contract of
// docs/byo-targets.md through the environment:
//
//	CHAOSRUN_LISTEN_ADDR     0.0.0.0:<Spec.Port>
//	CHAOSRUN_LEDGER_URL      the Args' --ledger
//	CHAOSRUN_BASE_UNIX_NANO  the Args' --base
//	CHAOSRUN_STATE_DIR       StateDir, the labelled state volume
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
const (
	envListenAddr = "CHAOSRUN_LISTEN_ADDR"
	envLedgerURL  = "CHAOSRUN_LEDGER_URL"
	envBase       = "CHAOSRUN_BASE_UNIX_NANO"
	envStateDir   = "CHAOSRUN_STATE_DIR"
)

// portPoll is how often an image target's port is probed while it starts.
const portPoll = 50 * time.Millisecond

// imageTarget returns the image a server spec asks to run in the agent's
// place, and whether it asks for one.
func imageTarget(spec agent.Spec) (string, bool) {
	if spec.Role != agent.RoleServer || flagValue(spec.Args, "target") != "image" {
		return "", false
	}
	return flagValue(spec.Args, "image"), true
}

// checkImageTarget makes sure the daemon holds the image. It is never
// pulled: no registry may be reachable, and a pull would only retry until
// the experiment's deadline.
func (r *Runtime) checkImageTarget(ctx context.Context, image string) error {
	if image == "" {
		return errors.New("server.target image: no --image given")
	}
	if _, err := r.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return fmt.Errorf("server.image %s: not on the Docker daemon (chaosrun does not pull images: build or load it first)", image)
		}
		return fmt.Errorf("server.image %s: %w", image, err)
	}
	return nil
}

// flagValue returns the value of the last --name VALUE or --name=VALUE in
// args, or "".
func flagValue(args []string, name string) string {
	v := ""
	for i, a := range args {
		switch {
		case a == "--"+name && i+1 < len(args):
			v = args[i+1]
		case strings.HasPrefix(a, "--"+name+"="):
			v = strings.TrimPrefix(a, "--"+name+"=")
		}
	}
	return v
}

// imageEnv is the environment of an image target: the contract, then
// Spec.Env.
func imageEnv(spec agent.Spec) map[string]string {
	env := map[string]string{
		envListenAddr: net.JoinHostPort("0.0.0.0", strconv.Itoa(spec.Port)),
		envLedgerURL:  flagValue(spec.Args, "ledger"),
		envBase:       flagValue(spec.Args, "base"),
		envStateDir:   StateDir,
	}
	for k, v := range envMap(spec.Env) {
		env[k] = v
	}
	return env
}

// awaitPort waits until an image target's port answers an HTTP request,
// then sets the URL. Through a published port the Docker proxy accepts
// connections before anything listens behind it, so a TCP connect alone
// proves nothing: an HTTP answer, whatever its status, does.
func (p *process) awaitPort(ctx context.Context, exited <-chan struct{}) error {
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
		case <-exited:
			return fmt.Errorf("image %s exited before its port %d answered (see %s)", p.image, p.spec.Port, p.spec.LogPath)
		case <-deadline.C:
			p.kill()
			return fmt.Errorf("image %s: port %d did not answer HTTP within %s (see %s)", p.image, p.spec.Port, p.rt.readyTimeout, p.spec.LogPath)
		case <-ctx.Done():
			p.kill()
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

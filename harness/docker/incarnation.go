package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// logDrain bounds how long an exit waits for the agent's last output to
// reach its log file.
const logDrain = 5 * time.Second

// incarnation is one start of an agent's container, from its start until
// its exit.
type incarnation struct {
	p      *process
	urlc   <-chan string // a serving agent's first stdout line
	exited chan struct{} // closed once the container has exited and its output drained
	code   int

	mu     sync.Mutex
	paused bool
}

// launch starts one incarnation: it attaches to the container's output
// before starting it (so nothing the agent prints is missed), registers for
// its exit, and starts it.
func (p *process) launch(ctx context.Context) (agent.Incarnation, error) {
	logf, err := os.OpenFile(p.spec.LogPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ictx, cancel := context.WithCancel(p.rt.bg)
	id := p.ctr.GetContainerID()
	att, err := p.rt.cli.ContainerAttach(ictx, id, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		cancel()
		logf.Close()
		return nil, fmt.Errorf("attach: %w", err)
	}
	context.AfterFunc(ictx, att.Close) // the stream is not tied to ictx by itself
	waited := p.rt.cli.ContainerWait(ictx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	urlc, pumped := make(chan string, 1), make(chan struct{})
	in := &incarnation{p: p, urlc: urlc, exited: make(chan struct{}), code: -1}
	go in.pump(att, logf, urlc, pumped)
	go in.watch(waited, pumped, cancel)
	if err := p.ctr.Start(ctx); err != nil {
		cancel() // ends the attach and the wait: the watch closes exited
		return nil, err
	}
	return in, nil
}

// pump copies the incarnation's output to the log file until the container
// exits; a serving agent's first stdout line goes to urlc instead.
func (in *incarnation) pump(att client.ContainerAttachResult, logf *os.File, urlc chan<- string, done chan<- struct{}) {
	defer close(done)
	defer logf.Close()
	defer att.Close()
	var stdout io.Writer = logf
	if in.p.spec.Serves && in.p.spec.Image == "" { // an image target prints no URL
		stdout = &firstLine{line: urlc, rest: logf}
	}
	_, _ = stdcopy.StdCopy(stdout, logf, att.Reader)
}

// watch waits for the incarnation's exit and lets its output drain.
func (in *incarnation) watch(waited client.ContainerWaitResult, pumped <-chan struct{}, cancel context.CancelFunc) {
	select {
	case res := <-waited.Result:
		in.code = int(res.StatusCode)
	case <-waited.Error:
	}
	select {
	case <-pumped:
	case <-time.After(logDrain):
	}
	cancel()
	close(in.exited)
}

func (in *incarnation) Exited() <-chan struct{} { return in.exited }

func (in *incarnation) ExitCode() int { return in.code }

// Ready waits for a serving agent's URL line, or for an image target's port
// to answer.
func (in *incarnation) Ready(ctx context.Context) error {
	switch {
	case !in.p.spec.Serves:
		return nil
	case in.p.spec.Image != "":
		return in.awaitPort(ctx)
	}
	return in.awaitURL(ctx)
}

func (in *incarnation) awaitURL(ctx context.Context) error {
	p := in.p
	line, err := agent.AwaitURL(ctx, in.urlc, in.exited, p.rt.readyTimeout, p.spec.LogPath)
	if err != nil {
		return err
	}
	return p.setURL(ctx, line)
}

// Stop is docker stop (SIGTERM, SIGKILL after StopGrace) when graceful,
// else docker kill (SIGKILL); either waits for the exit as long as ctx
// allows.
func (in *incarnation) Stop(ctx context.Context, graceful bool) error {
	p := in.p
	id := p.ctr.GetContainerID()
	in.mu.Lock()
	paused := in.paused
	in.paused = false
	in.mu.Unlock()
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
	case <-in.exited:
		return nil
	case <-wctx.Done():
		return errors.Join(err, fmt.Errorf("container %s did not exit: %w", p.name, wctx.Err()))
	}
}

func (in *incarnation) Pause(ctx context.Context) error {
	if _, err := in.p.rt.cli.ContainerPause(ctx, in.p.ctr.GetContainerID(), client.ContainerPauseOptions{}); err != nil {
		return fmt.Errorf("pause %s: %w", in.p.spec.Role, err)
	}
	in.mu.Lock()
	in.paused = true
	in.mu.Unlock()
	return nil
}

func (in *incarnation) Resume(ctx context.Context) error {
	if _, err := in.p.rt.cli.ContainerUnpause(ctx, in.p.ctr.GetContainerID(), client.ContainerUnpauseOptions{}); err != nil {
		return fmt.Errorf("resume %s: %w", in.p.spec.Role, err)
	}
	in.mu.Lock()
	in.paused = false
	in.mu.Unlock()
	return nil
}

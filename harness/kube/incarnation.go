package kube

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// logDrain bounds how long an exit waits for the agent's last output to
// reach its log file; signalledDrain, when the runtime saw the agent gone
// (the log stream ends only once the kubelet notices, up to a second
// later, and what the agent wrote is on its way already).
const (
	logDrain       = 5 * time.Second
	signalledDrain = 250 * time.Millisecond
)

// saPatience bounds how long a pod creation waits for the namespace's
// default service account, which a controller makes just after the
// namespace and without which pods are refused.
const saPatience = 30 * time.Second

// incarnation is one pod of an agent, from its creation until it is gone.
type incarnation struct {
	p    *process
	name string
	urlc chan string   // a serving agent's URL line
	ran  chan struct{} // closed once the container started (or ended)
	done chan struct{} // closed once the container ended or the pod is gone
	// exited is closed once done is and the log has drained.
	exited chan struct{}

	began time.Time // when its pod was asked for

	mu     sync.Mutex
	code   int
	node   string
	failed string // why the container cannot start, once known
	// signalled: the runtime ended the agent by a signal and saw it gone,
	// so its last output is already in the container's log.
	signalled bool
	ranOnce   sync.Once
	doneOnce  sync.Once
	paused    bool
}

// launch creates the agent's next pod and returns once its container runs.
func (p *process) launch(ctx context.Context) (agent.Incarnation, error) {
	r := p.rt
	in := &incarnation{p: p, name: p.nextPodName(), urlc: make(chan string, 1), ran: make(chan struct{}),
		done: make(chan struct{}), exited: make(chan struct{}), code: -1, began: time.Now()}
	r.mu.Lock()
	r.pods[in.name] = in
	r.mu.Unlock()
	forget := func() {
		r.mu.Lock()
		delete(r.pods, in.name)
		r.mu.Unlock()
	}
	if err := r.createPod(ctx, p.pod(in.name)); err != nil {
		forget()
		return nil, err
	}
	p.mu.Lock()
	p.last = in
	p.mu.Unlock()
	if err := in.awaitRun(ctx); err != nil {
		forget()
		in.deletePod(0)
		return nil, err
	}
	logf, err := openLog(p.spec.LogPath)
	if err != nil {
		forget()
		in.deletePod(0)
		return nil, err
	}
	r.log.Debug("pod runs", "pod", in.name, "after", time.Since(in.began).Round(time.Millisecond))
	pumped := make(chan struct{})
	go in.pump(logf, pumped)
	go in.watch(pumped, forget)
	return in, nil
}

// createPod creates pod, waiting out the namespace's missing default
// service account.
func (r *Runtime) createPod(ctx context.Context, pod *corev1.Pod) error {
	deadline := time.Now().Add(saPatience)
	for {
		_, err := r.c.cs.CoreV1().Pods(r.ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "serviceaccount") || time.Now().After(deadline) {
			return fmt.Errorf("create pod %s: %w", pod.Name, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// openLog opens the agent's log for appending, or discards when it has none.
func openLog(path string) (io.WriteCloser, error) {
	if path == "" {
		return nopCloser{io.Discard}, nil
	}
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// observe takes in the pod's state as the informer saw it.
func (in *incarnation) observe(pod *corev1.Pod, deleted bool) {
	in.mu.Lock()
	if pod.Spec.NodeName != "" {
		in.node = pod.Spec.NodeName
	}
	in.mu.Unlock()
	if deleted {
		in.end(-1)
		return
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name != containerName {
			continue
		}
		switch st := cs.State; {
		case st.Running != nil:
			in.ranOnce.Do(func() { close(in.ran) })
		case st.Terminated != nil:
			in.ranOnce.Do(func() { close(in.ran) })
			in.end(int(st.Terminated.ExitCode))
		case st.Waiting != nil && cannotStart(st.Waiting.Reason):
			in.fail(fmt.Sprintf("%s: %s", st.Waiting.Reason, st.Waiting.Message))
		}
	}
	if pod.Status.Phase == corev1.PodFailed && len(pod.Status.ContainerStatuses) == 0 {
		in.fail(fmt.Sprintf("pod failed: %s %s", pod.Status.Reason, pod.Status.Message))
		in.end(-1)
	}
}

// cannotStart tells the reasons a container waits for that it will not
// get over by itself.
func cannotStart(reason string) bool {
	switch reason {
	case "ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
		"CreateContainerConfigError", "CreateContainerError", "RunContainerError":
		return true
	}
	return false
}

func (in *incarnation) fail(why string) {
	in.mu.Lock()
	if in.failed == "" {
		in.failed = why
	}
	in.mu.Unlock()
	in.ranOnce.Do(func() { close(in.ran) })
}

func (in *incarnation) end(code int) {
	in.doneOnce.Do(func() {
		in.mu.Lock()
		if code != -1 || in.code == -1 {
			in.code = code
		}
		in.mu.Unlock()
		close(in.done)
	})
}

// awaitRun waits until the container runs (or already ended), and fails
// when it cannot start.
func (in *incarnation) awaitRun(ctx context.Context) error {
	r := in.p.rt
	timer := time.NewTimer(r.readyTimeout)
	defer timer.Stop()
	select {
	case <-in.ran:
	case <-timer.C:
		return fmt.Errorf("pod %s: its container did not start within %s", in.name, r.readyTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	in.mu.Lock()
	failed := in.failed
	in.mu.Unlock()
	if failed != "" {
		return fmt.Errorf("pod %s: %s (the image must be on the node, or in a registry it pulls from)", in.name, failed)
	}
	return nil
}

// pump copies the pod's log stream (stdout and stderr, which the kubelet
// keeps in one) to the log file until the container ends; a serving
// agent's URL line goes to urlc instead.
func (in *incarnation) pump(logf io.WriteCloser, done chan<- struct{}) {
	defer close(done)
	defer logf.Close()
	r := in.p.rt
	req := r.c.cs.CoreV1().Pods(r.ns).GetLogs(in.name, &corev1.PodLogOptions{Container: containerName, Follow: true})
	stream, err := req.Stream(r.bg)
	if err != nil {
		fmt.Fprintf(logf, "chaosrun: the log of pod %s: %v\n", in.name, err)
		return
	}
	defer stream.Close()
	context.AfterFunc(r.bg, func() { stream.Close() })
	sc := bufio.NewScanner(stream)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	sent := !in.p.spec.Serves
	for sc.Scan() {
		line := sc.Text()
		if !sent && isURL(line, in.p.spec.Port) {
			sent = true
			in.urlc <- line
			continue
		}
		if _, err := io.WriteString(logf, line+"\n"); err != nil {
			return
		}
	}
}

// isURL reports whether line is the URL an agent prints when it listens
// on port: stdout and stderr come mixed in a pod's log, and the agent's log
// lines are never a bare URL.
func isURL(line string, port int) bool {
	u, err := url.Parse(strings.TrimSpace(line))
	return err == nil && u.Scheme == "http" && u.Port() == strconv.Itoa(port) && (u.Path == "" || u.Path == "/")
}

// watch waits for the incarnation's end and its log's last lines, then
// closes exited, deletes the pod (a container that ended keeps its pod
// until then) and forgets it.
func (in *incarnation) watch(pumped <-chan struct{}, forget func()) {
	r := in.p.rt
	select {
	case <-in.done:
	case <-r.stopInf:
		in.end(-1)
	}
	drain := logDrain
	in.mu.Lock()
	if in.signalled {
		drain = signalledDrain
	}
	in.mu.Unlock()
	select {
	case <-pumped:
	case <-time.After(drain):
	}
	if in.p.fwd != nil {
		in.p.fwd.detach(in.name)
	}
	close(in.exited)
	forget()
	in.deletePod(0)
}

// deletePod deletes the pod with the given grace, without waiting.
func (in *incarnation) deletePod(grace int64) {
	r := in.p.rt
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := r.c.cs.CoreV1().Pods(r.ns).Delete(ctx, in.name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		r.log.Debug("delete pod", "pod", in.name, "err", err)
	}
}

func (in *incarnation) nodeName() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.node
}

func (in *incarnation) Exited() <-chan struct{} { return in.exited }

func (in *incarnation) ExitCode() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.code
}

// Ready waits for a serving agent's URL, then for its Service to list the
// pod (so its peers reach it), then points the runner's port-forward at it.
func (in *incarnation) Ready(ctx context.Context) error {
	p := in.p
	if !p.spec.Serves {
		return nil
	}
	if _, err := agent.AwaitURL(ctx, in.urlc, in.exited, p.rt.readyTimeout, p.spec.LogPath); err != nil {
		return err
	}
	listening := time.Now()
	if p.svc != nil {
		ectx, cancel := context.WithTimeout(ctx, p.rt.readyTimeout)
		err := p.rt.awaitEndpoint(ectx, p.svc.Name, in.name)
		cancel()
		if err != nil {
			return err
		}
	}
	if err := p.fwd.attach(ctx, in.name); err != nil {
		return err
	}
	p.mu.Lock()
	p.url = "http://" + p.fwd.addr()
	p.mu.Unlock()
	p.rt.log.Debug("pod ready", "pod", in.name, "listening_after", listening.Sub(in.began).Round(time.Millisecond),
		"ready_after", time.Since(in.began).Round(time.Millisecond))
	return nil
}

// Stop sends SIGTERM from inside the pod when graceful and waits up to
// StopGrace for the agent to be gone, else (or then) SIGKILL; it returns
// once the agent's processes are gone. Without its signal (the exec
// failed), it deletes the pod, for which the kubelet sends SIGTERM and,
// at least two seconds later, SIGKILL, and waits for the kubelet to report
// the end, as long as ctx allows.
func (in *incarnation) Stop(ctx context.Context, graceful bool) error {
	in.mu.Lock()
	paused := in.paused
	in.paused = false
	in.mu.Unlock()
	began := time.Now()
	if paused { // a frozen agent cannot handle SIGTERM
		_ = in.signal(ctx, "CONT", time.Second)
	}
	err := errors.New("not asked to end gracefully")
	if graceful {
		err = in.signal(ctx, "TERM", StopGrace)
	}
	if err != nil {
		err = in.signal(ctx, "KILL", 5*time.Second)
	}
	if err == nil {
		in.mu.Lock()
		in.signalled = true
		in.mu.Unlock()
		in.end(-1) // gone: the kubelet's report would come up to a second later
	} else {
		grace := int64(0)
		if graceful {
			grace = int64(StopGrace.Seconds())
		}
		in.deletePod(grace)
	}
	select {
	case <-in.exited:
		in.p.rt.log.Debug("pod ended", "pod", in.name, "graceful", graceful, "after", time.Since(began).Round(time.Millisecond))
		return nil
	case <-ctx.Done():
		return errors.Join(err, fmt.Errorf("pod %s did not end: %w", in.name, ctx.Err()))
	}
}

func (in *incarnation) Pause(ctx context.Context) error {
	if err := in.signal(ctx, "STOP", 5*time.Second); err != nil {
		return fmt.Errorf("pause %s: %w", in.p.spec.Role, err)
	}
	in.mu.Lock()
	in.paused = true
	in.mu.Unlock()
	return nil
}

func (in *incarnation) Resume(ctx context.Context) error {
	if err := in.signal(ctx, "CONT", 5*time.Second); err != nil {
		return fmt.Errorf("resume %s: %w", in.p.spec.Role, err)
	}
	in.mu.Lock()
	in.paused = false
	in.mu.Unlock()
	return nil
}

// signal runs "chaosrun agent signal SIG" in the agent's container, which
// returns once the agent is stopped (STOP) or gone (TERM, KILL), waiting
// at most wait.
func (in *incarnation) signal(ctx context.Context, sig string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait+10*time.Second)
	defer cancel()
	return in.p.rt.exec(ctx, in.name, binary, "agent", "signal", "--wait", wait.String(), sig)
}

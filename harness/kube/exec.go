package kube

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// exec runs command in the agent container of pod and fails, with what it
// printed, unless it exits 0. It speaks WebSocket, or SPDY to an API server
// that does not take WebSocket, as kubectl does.
func (r *Runtime) exec(ctx context.Context, pod string, command ...string) error {
	u := r.c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: containerName, Command: command, Stdout: true, Stderr: true},
			scheme.ParameterCodec).URL()
	ws, err := remotecommand.NewWebSocketExecutor(r.c.config, "GET", u.String())
	if err != nil {
		return fmt.Errorf("exec in %s: %w", pod, err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.c.config, "POST", u)
	if err != nil {
		return fmt.Errorf("exec in %s: %w", pod, err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, upgradeFailed)
	if err != nil {
		return fmt.Errorf("exec in %s: %w", pod, err)
	}
	// Stdout and stderr are copied by goroutines of their own, which may
	// outlive a cancelled stream.
	out := &syncBuffer{}
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out, Stderr: out}); err != nil {
		return fmt.Errorf("exec %s in %s: %w: %s", strings.Join(command, " "), pod, err, strings.TrimSpace(out.String()))
	}
	return nil
}

// syncBuffer is a bytes.Buffer for writers in several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// upgradeFailed tells an API server that does not speak the first
// protocol tried.
func upgradeFailed(err error) bool {
	return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
}

package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/streaming/pkg/httpstream"
)

// forward is the runner's way to a serving agent: a listener on
// 127.0.0.1 that lives as long as the agent, whose connections go through
// a port-forward to the agent's current pod. The local port stays the
// same across the agent's pods; while no pod serves, a connection is
// closed at once, as a refused one would be.
type forward struct {
	r      *Runtime
	remote int
	ln     net.Listener

	mu     sync.Mutex
	pod    string
	conn   httpstream.Connection // to pod; nil while none serves
	nextID int
	closed bool
}

func newForward(r *Runtime, remote int) *forward {
	return &forward{r: r, remote: remote}
}

// addr is the local address, host:port.
func (f *forward) addr() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln == nil {
		return ""
	}
	return f.ln.Addr().String()
}

// attach points the forward at pod, dialling its port-forward first, and
// starts listening on the first call.
func (f *forward) attach(ctx context.Context, pod string) error {
	conn, err := f.r.dialPod(ctx, pod)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		conn.Close()
		return errors.New("port-forward closed")
	}
	if f.ln == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			conn.Close()
			return err
		}
		f.ln = ln
		go f.serve(ln)
	}
	if f.conn != nil {
		f.conn.Close()
	}
	f.pod, f.conn = pod, conn
	return nil
}

// detach stops forwarding to pod, if it is still the current one.
func (f *forward) detach(pod string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pod == pod && f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

// close stops listening and forwarding.
func (f *forward) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.ln != nil {
		f.ln.Close()
	}
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

func (f *forward) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go f.handle(c)
	}
}

// handle copies one local connection to and from the pod's port, over a
// pair of streams of the port-forward (data, and error for what the
// kubelet reports).
func (f *forward) handle(local net.Conn) {
	defer local.Close()
	f.mu.Lock()
	conn, id := f.conn, f.nextID
	f.nextID++
	f.mu.Unlock()
	if conn == nil {
		return
	}
	headers := http.Header{}
	headers.Set(corev1.StreamType, corev1.StreamTypeError)
	headers.Set(corev1.PortHeader, strconv.Itoa(f.remote))
	headers.Set(corev1.PortForwardRequestIDHeader, strconv.Itoa(id))
	errStream, err := conn.CreateStream(headers)
	if err != nil {
		return
	}
	errStream.Close() // nothing is written to it
	defer conn.RemoveStreams(errStream)
	headers.Set(corev1.StreamType, corev1.StreamTypeData)
	data, err := conn.CreateStream(headers)
	if err != nil {
		return
	}
	defer conn.RemoveStreams(data)
	remoteDone := make(chan struct{})
	go func() {
		_, _ = io.Copy(local, data)
		close(remoteDone)
	}()
	go func() {
		_, _ = io.Copy(data, local)
		data.Close() // no more from this side
	}()
	errc := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, errStream); close(errc) }()
	select {
	case <-remoteDone:
	case <-errc: // the kubelet reported an error (nothing listens): end it
	}
	_ = data.Reset()
}

// dialPod opens a port-forward connection to pod: WebSocket, or SPDY to
// an API server that does not take WebSocket, as kubectl does.
func (r *Runtime) dialPod(ctx context.Context, pod string) (httpstream.Connection, error) {
	u := r.c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(r.ns).Name(pod).SubResource("portforward").URL()
	transport, upgrader, err := spdy.RoundTripperFor(r.c.config)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s: %w", pod, err)
	}
	dialer := spdy.NewDialerForStreaming(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	ws, err := portforward.NewSPDYOverWebsocketDialerForStreaming(u, r.c.config)
	if err != nil {
		return nil, fmt.Errorf("port-forward to %s: %w", pod, err)
	}
	type dialed struct {
		conn httpstream.Connection
		err  error
	}
	res := make(chan dialed, 1)
	go func() {
		conn, proto, err := portforward.NewFallbackDialerForStreaming(ws, dialer, upgradeFailed).Dial(portforward.PortForwardProtocolV1Name)
		if err == nil && proto != portforward.PortForwardProtocolV1Name {
			conn.Close()
			conn, err = nil, fmt.Errorf("the API server speaks %q, not %q", proto, portforward.PortForwardProtocolV1Name)
		}
		res <- dialed{conn, err}
	}()
	select {
	case d := <-res:
		if d.err != nil {
			return nil, fmt.Errorf("port-forward to %s: %w", pod, d.err)
		}
		return d.conn, nil
	case <-ctx.Done():
		go func() {
			if d := <-res; d.conn != nil {
				d.conn.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

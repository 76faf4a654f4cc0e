package kube

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chaosrun/chaosrun/harness/agent"
)

var _ agent.Balancing = (*Runtime)(nil)

// Balance makes a ClusterIP Service named b.Name that selects the pod of
// every agent of b.Role (each replica's pod, whichever incarnation runs),
// waits until its EndpointSlices list b.Members of them ready, and returns
// its cluster IP and port. kube-proxy picks a member per connection (in
// iptables mode at random, each member equally likely; not in turn); with
// b.Affinity the Service's sessionAffinity is ClientIP, which keeps every
// connection from one peer's address on one member while that member is
// ready. The Service goes with the namespace.
func (r *Runtime) Balance(ctx context.Context, b agent.Balance) (string, error) {
	svc := r.tmpl.balancerService(b)
	created, err := r.c.cs.CoreV1().Services(r.ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("balance %s: create service %s: %w", b.Role, b.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, r.readyTimeout)
	defer cancel()
	if err := r.awaitMembers(wctx, b.Name, b.Members); err != nil {
		return "", fmt.Errorf("balance %s: %w", b.Role, err)
	}
	return net.JoinHostPort(created.Spec.ClusterIP, strconv.Itoa(b.Port)), nil
}

// balancerService is the Service of Balance: the experiment's labels, a
// selector on the role alone (the namespace is the experiment's), and the
// affinity asked for.
func (t podTemplate) balancerService(b agent.Balance) *corev1.Service {
	affinity := corev1.ServiceAffinityNone
	var cfg *corev1.SessionAffinityConfig
	if b.Affinity {
		affinity = corev1.ServiceAffinityClientIP
		cfg = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr(int32(affinityTimeout.Seconds()))}}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: t.namespace,
			Labels: t.podLabels(map[string]string{LabelRole: b.Name, LabelAgent: b.Name})},
		Spec: corev1.ServiceSpec{
			Type:                  corev1.ServiceTypeClusterIP,
			Selector:              map[string]string{LabelRole: b.Role},
			Ports:                 servicePorts(agent.Spec{Port: b.Port}),
			SessionAffinity:       affinity,
			SessionAffinityConfig: cfg,
		},
	}
}

// affinityTimeout is how long a ClientIP affinity outlasts a peer's last
// connection: Kubernetes' default, three hours, longer than any experiment.
const affinityTimeout = 3 * time.Hour

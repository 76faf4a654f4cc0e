package kube

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/chaosrun/chaosrun/harness/agent"
)

func TestBalancerServiceMapsTheBalanceToSessionAffinity(t *testing.T) {
	tmpl := podTemplate{namespace: "ns", labels: map[string]string{LabelManaged: "1"}}
	tests := []struct {
		name     string
		affinity bool
		want     corev1.ServiceAffinity
	}{
		{"roundrobin: kube-proxy's own choice", false, corev1.ServiceAffinityNone},
		{"source: ClientIP", true, corev1.ServiceAffinityClientIP},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svc := tmpl.balancerService(agent.Balance{Name: "balancer", Role: agent.RoleServer, Port: 8080, Members: 3, Affinity: tt.affinity})
			assert.Equal(t, tt.want, svc.Spec.SessionAffinity)
			assert.Equal(t, tt.affinity, svc.Spec.SessionAffinityConfig != nil)
			assert.Equal(t, map[string]string{LabelRole: agent.RoleServer}, svc.Spec.Selector, "every replica's pod, by role")
			assert.Equal(t, corev1.ServiceTypeClusterIP, svc.Spec.Type)
			if assert.Len(t, svc.Spec.Ports, 1) {
				assert.Equal(t, int32(8080), svc.Spec.Ports[0].Port)
				assert.Equal(t, int32(8080), svc.Spec.Ports[0].TargetPort.IntVal)
			}
			assert.Equal(t, "1", svc.Labels[LabelManaged], "the experiment's labels, for clean")
		})
	}
}

func TestReadyPodsCountsEachReadyPodOnce(t *testing.T) {
	ep := func(pod string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
	}
	yes, no := ptr(true), ptr(false)
	tests := []struct {
		name   string
		slices []*discoveryv1.EndpointSlice
		want   []string
	}{
		{"none", nil, nil},
		{"ready, unknown counts as ready, not ready", []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", nil), ep("c", no)}}}, []string{"a", "b"}},
		{"one pod in two slices", []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{ep("a", yes)}}, {Endpoints: []discoveryv1.Endpoint{ep("a", yes), ep("b", yes)}}}, []string{"a", "b"}},
		{"no pod behind it", []*discoveryv1.EndpointSlice{{Endpoints: []discoveryv1.Endpoint{{Conditions: discoveryv1.EndpointConditions{Ready: yes}}}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, readyPods(tt.slices))
		})
	}
}

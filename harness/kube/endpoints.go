package kube

import (
	"context"
	"fmt"
	"slices"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// awaitEndpoint waits until an EndpointSlice of the Service svc lists pod
// as ready: from then on the Service's cluster IP leads to it.
func (r *Runtime) awaitEndpoint(ctx context.Context, svc, pod string) error {
	lister := r.informers.Discovery().V1().EndpointSlices().Lister().EndpointSlices(r.ns)
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: svc})
	for {
		r.mu.Lock()
		changed := r.slicesCh
		r.mu.Unlock()
		list, err := lister.List(sel)
		if err != nil {
			return err
		}
		if lists(list, pod) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("service %s does not list pod %s: %w", svc, pod, ctx.Err())
		}
	}
}

// lists reports whether one of the slices holds pod as a ready endpoint.
func lists(list []*discoveryv1.EndpointSlice, pod string) bool {
	for _, s := range list {
		if slices.ContainsFunc(s.Endpoints, func(e discoveryv1.Endpoint) bool {
			return e.TargetRef != nil && e.TargetRef.Kind == "Pod" && e.TargetRef.Name == pod &&
				(e.Conditions.Ready == nil || *e.Conditions.Ready)
		}) {
			return true
		}
	}
	return false
}

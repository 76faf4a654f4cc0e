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
	return r.awaitReady(ctx, svc, func(ready []string) bool { return slices.Contains(ready, pod) },
		func([]string) string { return "does not list pod " + pod })
}

// awaitMembers waits until the EndpointSlices of the Service svc list n
// ready pods.
func (r *Runtime) awaitMembers(ctx context.Context, svc string, n int) error {
	return r.awaitReady(ctx, svc, func(ready []string) bool { return len(ready) >= n },
		func(ready []string) string { return fmt.Sprintf("lists %d of %d ready pods", len(ready), n) })
}

// awaitReady waits, on the informer's EndpointSlices, until the pods the
// Service svc lists as ready satisfy enough; when ctx ends first, the
// error says what was awaited (short).
func (r *Runtime) awaitReady(ctx context.Context, svc string, enough func(ready []string) bool, short func(ready []string) string) error {
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
		ready := readyPods(list)
		if enough(ready) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("service %s %s: %w", svc, short(ready), ctx.Err())
		}
	}
}

// readyPods returns the distinct pods the slices hold as ready endpoints
// (an endpoint without a ready condition is ready).
func readyPods(list []*discoveryv1.EndpointSlice) []string {
	var pods []string
	for _, s := range list {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" || (e.Conditions.Ready != nil && !*e.Conditions.Ready) {
				continue
			}
			if !slices.Contains(pods, e.TargetRef.Name) {
				pods = append(pods, e.TargetRef.Name)
			}
		}
	}
	return pods
}

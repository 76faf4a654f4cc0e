package kube

import (
	"context"
	"errors"
	"fmt"
	"path"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Removed counts what a cleanup removed.
type Removed struct {
	Namespaces int
	// Folders counts the experiments whose folders were removed from
	// their node.
	Folders int
}

// cleanerTimeout bounds how long Clean waits for the pod that removes an
// experiment's folders.
const cleanerTimeout = time.Minute

// Clean deletes every namespace labelled chaosrun=1, or, when runID is
// not empty, only those of that run: what a runner that was killed left
// behind. Before it deletes a namespace whose keeper had a node, it runs
// a pod there that removes the experiment's folders from the node. It must
// not run while a run it would match is in progress.
func Clean(ctx context.Context, c *Cluster, runID string) (Removed, error) {
	set := labels.Set{LabelManaged: "1"}
	if runID != "" {
		set[LabelRun] = labelValue(runID)
	}
	list, err := c.cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(set).String()})
	if err != nil {
		return Removed{}, fmt.Errorf("clean: %w", err)
	}
	var n Removed
	var errs []error
	for _, ns := range list.Items {
		if ns.Status.Phase != corev1.NamespaceTerminating {
			switch err := removeFolders(ctx, c, &ns); {
			case err != nil:
				errs = append(errs, err)
			case ns.Annotations[AnnotationNode] != "":
				n.Folders++
			}
		}
		if err := deleteNamespace(ctx, c, ns.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		n.Namespaces++
	}
	if err := errors.Join(errs...); err != nil {
		return n, fmt.Errorf("clean: %w", err)
	}
	return n, nil
}

// removeFolders runs "chaosrun agent keeper --remove" on the namespace's
// node, with its state root, from its image, and waits for it to succeed.
func removeFolders(ctx context.Context, c *Cluster, ns *corev1.Namespace) error {
	a := ns.Annotations
	node, root, image := a[AnnotationNode], a[AnnotationStateRoot], a[AnnotationImage]
	if node == "" || root == "" || image == "" {
		return nil // the keeper never ran: nothing on a node
	}
	t := podTemplate{namespace: ns.Name, image: image, stateRoot: root, node: node, labels: ns.Labels}
	pod := t.keeperPod()
	pod.Name = "cleaner-" + randomHex(3)
	pod.Spec.Containers[0].Args = []string{"agent", "keeper", "--root", path.Join(keeperMount, ns.Name), "--remove"}
	pod.Spec.Containers[0].Ports = nil
	pods := c.cs.CoreV1().Pods(ns.Name)
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("remove the folders of %s: %w", ns.Name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cleanerTimeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return fmt.Errorf("remove the folders of %s: the pod %s is gone", ns.Name, pod.Name)
		case err == nil && got.Status.Phase == corev1.PodSucceeded:
			return nil
		case err == nil && got.Status.Phase == corev1.PodFailed:
			return fmt.Errorf("remove the folders of %s on %s: the pod %s failed", ns.Name, node, pod.Name)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("remove the folders of %s on %s: %w", ns.Name, node, ctx.Err())
		case <-tick.C:
		}
	}
}

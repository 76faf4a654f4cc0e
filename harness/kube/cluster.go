package kube

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is a connection to the API server of a cluster, shared by the
// runtimes of a run.
type Cluster struct {
	config *rest.Config
	cs     kubernetes.Interface
}

// Connect reads the kubeconfig at path ("" for $KUBECONFIG, then
// ~/.kube/config, as kubectl does) and checks that its API server answers.
func Connect(ctx context.Context, path string) (*Cluster, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	// An experiment makes a few dozen calls at once at its start and end;
	// client-go's default of 5 a second would make them wait.
	config.QPS, config.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Raw(); err != nil {
		return nil, fmt.Errorf("the API server at %s does not answer: %w", config.Host, err)
	}
	return &Cluster{config: config, cs: cs}, nil
}

// Host is the API server's address.
func (c *Cluster) Host() string { return c.config.Host }

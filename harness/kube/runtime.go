package kube

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/kube/agentside"
)

// Name is the kubernetes runtime's name, as --runtime takes it.
const Name = "kubernetes"

// DefaultStateRoot is the node's folder under which the agents' folders
// are kept while an experiment runs.
const DefaultStateRoot = "/var/lib/chaosrun-kube"

// StopGrace is how long a graceful stop waits after SIGTERM before SIGKILL
// (the pods' termination grace).
const StopGrace = 30 * time.Second

const (
	defaultReadyTimeout = 60 * time.Second
	closeTimeout        = 2 * time.Minute
)

// Capabilities is what the kubernetes runtime runs: chaosrun's own agents,
// paused by SIGSTOP from inside their pods. Not a server's image nor a
// program of the user's (the agent image holds only chaosrun), not a fixed
// address on the runner's loopback, nor the programs the runner starts
// there. Each pod has its own open-file limit.
func Capabilities() agent.Capabilities {
	return agent.Capabilities{Runtime: Name, Pause: true, Services: true, Why: map[string]string{
		agent.CapImages:         "the kubernetes runtime runs only chaosrun's own agent image; a server's own image as a pod is not built yet",
		agent.CapPrograms:       "an agent's pod holds only the chaosrun binary of the agent image, and the runtime copies no program of yours into it",
		agent.CapFixedAddresses: "in a pod the server listens on the address it is given ($CHAOSRUN_LISTEN_ADDR, {addr} or {port})",
		agent.CapDaemons:        "nginx, HAProxy and redis-server run on the runner's loopback, which pods cannot reach; the kubernetes runtime starts no pod of them yet",
	}}
}

// Options configure a runtime for one experiment.
type Options struct {
	// RunID is the value of LabelRun on everything the runtime creates.
	RunID string
	// Image is the agent image as the cluster's nodes know it: the static
	// chaosrun binary at /chaosrun (docker.BuildImage makes one). It is
	// pulled only if a node lacks it.
	Image string
	// ExperimentName goes into the namespace's name and labels.
	ExperimentName string
	// StateRoot is the node's folder for the agents' folders
	// (DefaultStateRoot when empty).
	StateRoot string
	// Logger receives progress; nil discards.
	Logger *slog.Logger
}

// Runtime starts the agents of one experiment as pods in a namespace of
// its own. It implements agent.Runtime.
type Runtime struct {
	opts Options
	c    *Cluster
	ns   string
	tmpl podTemplate
	log  *slog.Logger

	informers informers.SharedInformerFactory
	stopInf   chan struct{}

	readyTimeout time.Duration
	// bg outlives every Start: it carries the log streams of running pods
	// until Close has collected everything.
	bg        context.Context
	stopBG    context.CancelFunc
	closing   context.Context // cancelled when Close begins, aborting Starts
	abortRuns context.CancelFunc
	unwatch   func() bool

	keeper  *process
	keepers *agentside.Client

	mu       sync.Mutex
	closed   bool
	procs    []*process
	aliases  map[string]int
	pods     map[string]*incarnation // by pod name, for the informer
	slicesCh chan struct{}           // closed, and replaced, when an EndpointSlice changes
	inflight sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

var _ agent.Runtime = (*Runtime)(nil)

// Capabilities is the package's.
func (r *Runtime) Capabilities() agent.Capabilities { return Capabilities() }

// Namespace is the experiment's namespace.
func (r *Runtime) Namespace() string { return r.ns }

// New creates the experiment's namespace and starts its keeper, whose node
// every agent of the experiment runs on. The runtime lives until Close or
// until ctx is cancelled, which removes everything it created just as
// Close does.
func New(ctx context.Context, c *Cluster, opts Options) (*Runtime, error) {
	switch {
	case opts.RunID == "":
		return nil, errors.New("kubernetes runtime: a run id is required")
	case opts.Image == "":
		return nil, errors.New("kubernetes runtime: an agent image is required")
	}
	if opts.StateRoot == "" {
		opts.StateRoot = DefaultStateRoot
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ns := namespaceName(opts.ExperimentName, randomHex(4))
	r := &Runtime{
		opts: opts, c: c, ns: ns, log: log, readyTimeout: defaultReadyTimeout,
		aliases: map[string]int{}, pods: map[string]*incarnation{}, slicesCh: make(chan struct{}),
		stopInf: make(chan struct{}),
		tmpl: podTemplate{namespace: ns, image: opts.Image, stateRoot: opts.StateRoot, labels: map[string]string{
			LabelManaged: "1", LabelRun: labelValue(opts.RunID), LabelExperiment: labelValue(nameFragment(opts.ExperimentName, 63)),
		}},
	}
	r.bg, r.stopBG = context.WithCancel(context.Background())
	r.closing, r.abortRuns = context.WithCancel(context.Background())
	r.unwatch = func() bool { return false }
	if err := r.createNamespace(ctx); err != nil {
		return nil, fmt.Errorf("kubernetes runtime: %w", err)
	}
	if err := r.startInformers(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("kubernetes runtime: %w", err), r.Close())
	}
	if err := r.startKeeper(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("kubernetes runtime: %w", err), r.Close())
	}
	r.unwatch = context.AfterFunc(ctx, func() { _ = r.Close() })
	return r, nil
}

func (r *Runtime) createNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns, Labels: r.tmpl.podLabels(nil),
		Annotations: map[string]string{AnnotationStateRoot: r.opts.StateRoot, AnnotationImage: r.opts.Image}}}
	if _, err := r.c.cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create namespace %s: %w", r.ns, err)
	}
	return nil
}

// startInformers watches the namespace's pods (each incarnation's state)
// and EndpointSlices (whether a Service lists a pod yet).
func (r *Runtime) startInformers(ctx context.Context) error {
	r.informers = informers.NewSharedInformerFactoryWithOptions(r.c.cs, 0, informers.WithNamespace(r.ns))
	pods := r.informers.Core().V1().Pods().Informer()
	_, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.observe(o, false) },
		UpdateFunc: func(_, o any) { r.observe(o, false) },
		DeleteFunc: func(o any) { r.observe(o, true) },
	})
	if err != nil {
		return err
	}
	slices := r.informers.Discovery().V1().EndpointSlices().Informer()
	changed := func(any) { r.slicesChanged() }
	if _, err := slices.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: changed, UpdateFunc: func(_, o any) { changed(o) }, DeleteFunc: changed,
	}); err != nil {
		return err
	}
	r.informers.Start(r.stopInf)
	sctx, cancel := context.WithTimeout(ctx, r.readyTimeout)
	defer cancel()
	for typ, ok := range r.informers.WaitForCacheSync(sctx.Done()) {
		if !ok {
			return fmt.Errorf("watch %s in %s: not synced within %s", typ, r.ns, r.readyTimeout)
		}
	}
	return nil
}

// observe hands a pod's news to its incarnation.
func (r *Runtime) observe(o any, deleted bool) {
	if t, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = t.Obj
	}
	pod, ok := o.(*corev1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	in := r.pods[pod.Name]
	r.mu.Unlock()
	if in != nil {
		in.observe(pod, deleted)
	}
}

func (r *Runtime) slicesChanged() {
	r.mu.Lock()
	close(r.slicesCh)
	r.slicesCh = make(chan struct{})
	r.mu.Unlock()
}

// startKeeper starts the keeper pod, lets the scheduler place it, and pins
// every later pod to its node.
func (r *Runtime) startKeeper(ctx context.Context) error {
	began := time.Now()
	spec := agent.Spec{Role: keeperName, Serves: true, Port: keeperPort}
	k := r.newProcess(spec, keeperName, nil)
	k.pod = func(name string) *corev1.Pod { p := r.tmpl.keeperPod(); p.Name = name; return p }
	r.keeper = k
	if err := k.Start(ctx); err != nil {
		return fmt.Errorf("start the keeper: %w", err)
	}
	r.keepers = agentside.NewClient(k.URL())
	node := k.node()
	if node == "" {
		return errors.New("the keeper runs on no node")
	}
	r.tmpl.node = node
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, AnnotationNode, node)
	if _, err := r.c.cs.CoreV1().Namespaces().Patch(ctx, r.ns, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("annotate namespace %s: %w", r.ns, err)
	}
	r.log.Debug("keeper started", "namespace", r.ns, "node", node, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// Start makes the agent's folder with its configuration, its Service when
// it serves, then its first pod, and waits until it is ready.
func (r *Runtime) Start(ctx context.Context, spec agent.Spec) (agent.Process, error) {
	switch {
	case spec.Serves && spec.Port <= 0:
		return nil, fmt.Errorf("start %s: a serving agent needs the port it listens on", spec.Role)
	case spec.Image != "":
		return nil, fmt.Errorf("start %s: image %s: %s", spec.Role, spec.Image, Capabilities().Why[agent.CapImages])
	case spec.Program != "":
		return nil, fmt.Errorf("start %s: program %s: %s", spec.Role, spec.Program, Capabilities().Why[agent.CapPrograms])
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("kubernetes runtime: closed")
	}
	alias := r.uniqueAlias(spec.Role)
	r.inflight.Add(1)
	r.mu.Unlock()
	defer r.inflight.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.closing, cancel)()
	began := time.Now()
	if err := r.prepare(ctx, alias, spec); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	var svc *corev1.Service
	if spec.Serves {
		s, err := r.c.cs.CoreV1().Services(r.ns).Create(ctx, r.tmpl.service(alias, spec), metav1.CreateOptions{})
		if err != nil {
			return nil, fmt.Errorf("start %s: create service: %w", spec.Role, err)
		}
		svc = s
	}
	p := r.newProcess(spec, alias, svc)
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	r.log.Debug("agent started", "role", spec.Role, "agent", alias, "url", p.URL(), "peer", p.PeerAddr(),
		"took", time.Since(began).Round(time.Millisecond))
	return p, nil
}

// prepare has the keeper make the agent's folder and write its
// configuration there.
func (r *Runtime) prepare(ctx context.Context, alias string, spec agent.Spec) error {
	if err := r.keepers.MakeDir(ctx, alias); err != nil {
		return err
	}
	if spec.Config == nil {
		return nil
	}
	return r.keepers.WriteFile(ctx, alias+"/"+agent.ConfigFile, spec.Config)
}

// uniqueAlias returns role, or role-N when the role already has an agent.
// Callers hold r.mu.
func (r *Runtime) uniqueAlias(role string) string {
	r.aliases[role]++
	if n := r.aliases[role]; n > 1 {
		return fmt.Sprintf("%s-%d", role, n)
	}
	return role
}

// Close kills every agent, copies each agent's folder to its Spec.StateDir,
// removes the folders from the node and deletes the namespace, waiting
// (at most two minutes) until it is gone. It is idempotent; later calls
// return the first call's result.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.close() })
	return r.closeErr
}

func (r *Runtime) close() error {
	r.unwatch()
	r.mu.Lock()
	r.closed = true
	procs := r.procs
	r.mu.Unlock()
	r.abortRuns()
	r.inflight.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	began := time.Now()
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.finish(ctx) })
	}
	wg.Wait()
	if r.keepers != nil {
		errs = append(errs, r.keepers.Remove(ctx))
	}
	collected := time.Now()
	// The keeper goes with the namespace.
	errs = append(errs, deleteNamespace(ctx, r.c, r.ns))
	r.log.Debug("kubernetes runtime closed", "namespace", r.ns,
		"agents_stopped_and_collected", collected.Sub(began).Round(time.Millisecond),
		"namespace_deleted", time.Since(collected).Round(time.Millisecond))
	if r.keeper != nil {
		r.keeper.fwd.close()
	}
	if r.informers != nil {
		close(r.stopInf)
		r.informers.Shutdown()
	}
	r.stopBG()
	return errors.Join(errs...)
}

// deleteNamespace deletes the namespace's pods at once, then the namespace,
// and waits until it is gone.
func deleteNamespace(ctx context.Context, c *Cluster, ns string) error {
	pods := c.cs.CoreV1().Pods(ns)
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}, metav1.ListOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the pods of %s: %w", ns, err)
	}
	err := c.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{PropagationPolicy: ptr(metav1.DeletePropagationBackground)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete namespace %s: %w", ns, err)
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("namespace %s is not gone: %w", ns, ctx.Err())
		case <-tick.C:
		}
	}
}

package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// Labels on what the runtime creates. Every container, network and volume
// carries LabelManaged=1, LabelRun=<run id> and LabelRuntime=<runtime id>.
const (
	LabelManaged    = "chaosrun"
	LabelRun        = "chaosrun.run"
	LabelRuntime    = "chaosrun.runtime"
	LabelExperiment = "chaosrun.experiment"
	LabelRole       = "chaosrun.role"
	// LabelImage marks images BuildImage made. It is deliberately not
	// LabelManaged: containers inherit image labels, and Clean must never
	// match a container it did not create.
	LabelImage = "chaosrun.image"
)

// StopGrace is how long a graceful stop waits after SIGTERM before SIGKILL.
const StopGrace = 30 * time.Second

const (
	defaultReadyTimeout = 30 * time.Second
	closeTimeout        = 2 * time.Minute
)

// Options configure a runtime for one experiment.
type Options struct {
	// RunID is the value of LabelRun on everything the runtime creates.
	RunID string
	// Image is an existing image whose entrypoint is the chaosrun binary at
	// /chaosrun; when empty, the image is built from Binary (BuildImage).
	Image string
	// Binary is a static linux chaosrun binary to build the image from.
	Binary string
	// ExperimentName goes into container, network and volume names.
	ExperimentName string
	// ProxyAPIHostPort, when not zero, publishes the proxy agent's port on
	// this fixed port of the Docker host's 127.0.0.1, so a person can reach
	// its Toxiproxy API; only one runtime at a time can use a given port.
	// Zero publishes it on a random port, like every other serving agent.
	ProxyAPIHostPort int
	// Logger receives progress and testcontainers' messages; nil discards.
	Logger *slog.Logger
}

// Runtime starts the agents of one experiment as containers on one private
// network. It implements agent.Runtime.
type Runtime struct {
	opts     Options
	id       string // random; in names and LabelRuntime
	base     string // name prefix of every container and volume
	network  string // the experiment's network, named like base
	image    string
	log      *slog.Logger
	provider *testcontainers.DockerProvider
	cli      client.APIClient
	self     string // the runner's own container, "" on the Docker host

	readyTimeout time.Duration
	// bg outlives every Start: it carries the attach and wait streams of
	// running containers until Close.
	bg        context.Context
	stopBG    context.CancelFunc
	closing   context.Context // cancelled when Close begins, aborting Starts
	abortRuns context.CancelFunc
	unwatch   func() bool

	mu       sync.Mutex
	closed   bool
	procs    []*process
	aliases  map[string]int
	inflight sync.WaitGroup

	closeOnce sync.Once
	closeErr  error
}

var _ agent.Runtime = (*Runtime)(nil)

// Name is the docker runtime's name, as --runtime takes it.
const Name = "docker"

// Capabilities is what the docker runtime runs: a server's own image, and
// a pause (a container pause), a static program of the user's copied in;
// not a fixed address on the runner's loopback, nor the programs the runner
// starts there. Each container has its own open-file limit.
func Capabilities() agent.Capabilities {
	return agent.Capabilities{Runtime: Name, Images: true, Pause: true, Programs: true, Why: map[string]string{
		agent.CapFixedAddresses: "in a container the server listens on $CHAOSRUN_LISTEN_ADDR (0.0.0.0:8080), or takes it by {addr} or {port}",
		agent.CapDaemons:        "the docker runtime has no image of it",
		agent.CapServices:       "a Service is the cluster's; the docker runtime runs containers on one Docker host, with no balancer of its own",
	}}
}

// Capabilities is the package's.
func (r *Runtime) Capabilities() agent.Capabilities { return Capabilities() }

// New connects to the Docker daemon, makes sure the image exists (building
// it from Options.Binary when Options.Image is empty) and creates the
// experiment's network. The runtime lives until Close or until ctx is
// cancelled, which removes everything it created just as Close does.
func New(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.RunID == "" {
		return nil, errors.New("docker runtime: a run id is required")
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	provider, err := newProvider(log)
	if err != nil {
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	image, err := resolveImage(ctx, provider.Client(), opts, log)
	if err != nil {
		provider.Close()
		return nil, fmt.Errorf("docker runtime: %w", err)
	}
	id := randomHex(4)
	base := "chaosrun-" + nameFragment(opts.ExperimentName) + "-" + id
	r := &Runtime{
		opts: opts, id: id, base: base, network: base, image: image, log: log,
		provider: provider, cli: provider.Client(), readyTimeout: defaultReadyTimeout, aliases: map[string]int{},
	}
	r.bg, r.stopBG = context.WithCancel(context.Background())
	r.closing, r.abortRuns = context.WithCancel(context.Background())
	r.unwatch = func() bool { return false }
	r.self = selfContainer(ctx, r.cli)
	if err := r.createNetwork(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("docker runtime: %w", err), r.Close())
	}
	r.unwatch = context.AfterFunc(ctx, func() { _ = r.Close() })
	return r, nil
}

// resolveImage returns Options.Image, or the image built from
// Options.Binary, after checking that the daemon holds it.
func resolveImage(ctx context.Context, cli client.APIClient, opts Options, log *slog.Logger) (string, error) {
	image := opts.Image
	if image == "" {
		if opts.Binary == "" {
			return "", errors.New("neither an image nor a binary to build one from")
		}
		tag, err := buildImage(ctx, opts.Binary, log)
		if err != nil {
			return "", err
		}
		image = tag
	}
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return "", fmt.Errorf("image %s: %w", image, err)
	}
	return image, nil
}

// Image is the tag of the image the runtime's containers run.
func (r *Runtime) Image() string { return r.image }

// Network is the name of the experiment's network.
func (r *Runtime) Network() string { return r.network }

func (r *Runtime) createNetwork(ctx context.Context) error {
	res, err := r.cli.NetworkCreate(ctx, r.network, client.NetworkCreateOptions{
		Driver: "bridge",
		Labels: r.labels(nil),
	})
	if err != nil {
		return fmt.Errorf("create network: %w", err)
	}
	if r.self == "" {
		return nil
	}
	// Joined without an alias: the runner must not answer to a role name.
	if _, err := r.cli.NetworkConnect(ctx, res.ID, client.NetworkConnectOptions{Container: r.self}); err != nil {
		return fmt.Errorf("connect the runner's container to %s: %w", r.network, err)
	}
	return nil
}

// labels returns the runtime's labels plus extra.
func (r *Runtime) labels(extra map[string]string) map[string]string {
	l := map[string]string{
		LabelManaged:    "1",
		LabelRun:        r.opts.RunID,
		LabelRuntime:    r.id,
		LabelExperiment: r.opts.ExperimentName,
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// Start creates the agent's container and state volume, starts it and, when
// it serves, waits until it has printed its URL.
func (r *Runtime) Start(ctx context.Context, spec agent.Spec) (agent.Process, error) {
	if spec.Serves && spec.Port <= 0 {
		return nil, fmt.Errorf("start %s: a serving agent needs the port it listens on", spec.Role)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("docker runtime: closed")
	}
	alias := r.uniqueAlias(spec.Role)
	r.inflight.Add(1)
	r.mu.Unlock()
	defer r.inflight.Done()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.closing, cancel)()
	began := time.Now()
	p, err := r.create(ctx, spec, alias)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	r.mu.Lock()
	r.procs = append(r.procs, p)
	r.mu.Unlock()
	if err := p.Start(ctx); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.Role, err)
	}
	r.log.Debug("agent started", "role", spec.Role, "container", p.name, "url", p.URL(),
		"took", time.Since(began).Round(time.Millisecond))
	return p, nil
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

// Close kills every agent, copies each agent's state folder to its
// Spec.StateDir, and removes every container, volume and network the runtime
// created. It is idempotent; later calls return the first call's result.
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
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.finish(ctx) })
	}
	wg.Wait()
	removed, err := removeLabelled(ctx, r.cli, labelFilter(LabelRuntime, r.id), r.self)
	r.log.Debug("docker runtime closed", "network", r.network, "containers", removed.Containers,
		"volumes", removed.Volumes, "networks", removed.Networks)
	r.stopBG()
	return errors.Join(append(errs, err, r.provider.Close())...)
}

// newProvider returns a testcontainers Docker provider that logs to log.
// Ryuk is switched off first: its image cannot be pulled, and cleanup is
// done by label instead.
func newProvider(log *slog.Logger) (*testcontainers.DockerProvider, error) {
	if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
		if err := os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true"); err != nil {
			return nil, err
		}
	}
	if !testcontainers.ReadConfig().RyukDisabled {
		return nil, errors.New("the Ryuk reaper is enabled but its image cannot be pulled; " +
			"set TESTCONTAINERS_RYUK_DISABLED=true")
	}
	quietOnce.Do(func() { tclog.SetDefault(defaultLogger{}) })
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tcLogger{log}))
	if err != nil {
		return nil, fmt.Errorf("docker daemon unreachable: %w", err)
	}
	return p, nil
}

// quietOnce routes the messages testcontainers prints through its global
// logger (a banner on first contact with the daemon) to slog at debug level
// instead of stderr.
var quietOnce sync.Once

type defaultLogger struct{}

func (defaultLogger) Printf(format string, v ...any) { tcLogger{slog.Default()}.Printf(format, v...) }

// tcLogger hands testcontainers' messages to slog at debug level.
type tcLogger struct{ log *slog.Logger }

func (l tcLogger) Printf(format string, v ...any) {
	l.log.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "testcontainers")
}

// nameFragment makes s usable inside a Docker object name.
func nameFragment(s string) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-_.")
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-_.")
	}
	if out == "" {
		return "experiment"
	}
	return out
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

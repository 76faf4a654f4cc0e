package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/shlex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/docker"
	"github.com/chaosrun/chaosrun/harness/kube"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/sideeffects"
)

// The kubernetes tests run against a real cluster: the one the kubeconfig
// in $CHAOSRUN_KUBECONFIG (or $KUBECONFIG) names. Without one they skip,
// unless CHAOSRUN_REQUIRE_KUBE=1 makes them fail. The agent image is built
// by Docker from a static build of this command, and put on the cluster's
// node by $CHAOSRUN_KUBE_LOAD (a command, the image appended; default
// scripts/kube/cluster load-image when that script is there);
// $CHAOSRUN_KUBE_IMAGE names an image already on the node instead.

var (
	kubeOnce  sync.Once
	kubeFix   kubeFixture
	kubeBuilt string // folder of the static build, removed by the test that made it
)

type kubeFixture struct {
	kubeconfig string
	image      string
	cs         kubernetes.Interface
	err        error
	skip       string
}

// needKube returns the cluster and the agent image, or skips (fails under
// CHAOSRUN_REQUIRE_KUBE=1) with why there is none.
func needKube(t *testing.T) kubeFixture {
	t.Helper()
	kubeOnce.Do(func() { kubeFix = setUpKube() })
	if kubeFix.skip != "" {
		if os.Getenv("CHAOSRUN_REQUIRE_KUBE") == "1" {
			t.Fatalf("no cluster and CHAOSRUN_REQUIRE_KUBE=1: %s", kubeFix.skip)
		}
		t.Skipf("no cluster (CHAOSRUN_REQUIRE_KUBE=1 makes this a failure): %s", kubeFix.skip)
	}
	require.NoError(t, kubeFix.err)
	return kubeFix
}

func setUpKube() kubeFixture {
	var f kubeFixture
	f.kubeconfig = os.Getenv("CHAOSRUN_KUBECONFIG")
	if f.kubeconfig == "" {
		f.kubeconfig = os.Getenv("KUBECONFIG")
	}
	if f.kubeconfig == "" {
		f.skip = "neither CHAOSRUN_KUBECONFIG nor KUBECONFIG names a kubeconfig"
		return f
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if _, err := kube.Connect(ctx, f.kubeconfig); err != nil {
		f.skip = err.Error()
		return f
	}
	config, err := clientcmd.BuildConfigFromFlags("", f.kubeconfig)
	if err == nil {
		f.cs, err = kubernetes.NewForConfig(config)
	}
	if err != nil {
		f.err = err
		return f
	}
	if f.image = os.Getenv("CHAOSRUN_KUBE_IMAGE"); f.image != "" {
		return f
	}
	f.image, f.err = buildKubeImage(ctx)
	return f
}

// buildKubeImage builds this command static, makes the agent image of it
// and loads it into the cluster.
func buildKubeImage(ctx context.Context) (string, error) {
	dir, err := os.MkdirTemp("", "chaosrun-kube-test-")
	if err != nil {
		return "", err
	}
	kubeBuilt = dir
	bin := filepath.Join(dir, "chaosrun")
	build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %w\n%s", err, out)
	}
	image, err := docker.BuildImage(ctx, bin)
	if err != nil {
		return "", err
	}
	load := os.Getenv("CHAOSRUN_KUBE_LOAD")
	if script, _ := filepath.Abs("../../scripts/kube/cluster"); load == "" {
		if _, err := os.Stat(script); err == nil {
			load = script + " load-image"
		}
	}
	if load == "" {
		return image, nil // the node is the Docker host, or pulls it
	}
	argv, err := shlex.Split(load)
	if err != nil {
		return "", fmt.Errorf("CHAOSRUN_KUBE_LOAD: %w", err)
	}
	if out, err := exec.CommandContext(ctx, argv[0], append(argv[1:], image)...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", load, image, err, out)
	}
	return image, nil
}

// kubeRun runs chaosrun run on the cluster and returns the exit code and
// the run's folder.
func kubeRun(ctx context.Context, t *testing.T, f kubeFixture, out string, args ...string) (int, string, time.Duration) {
	t.Helper()
	all := append([]string{"run", "-q", "--runtime", "kubernetes", "--kubeconfig", f.kubeconfig, "--kube-image", f.image, "--out", out}, args...)
	return timedRun(ctx, t, out, all...)
}

func timedRun(ctx context.Context, t *testing.T, out string, args ...string) (int, string, time.Duration) {
	t.Helper()
	var stdout, stderr bufferWriter
	began := time.Now()
	code := execute(ctx, args, &stdout, &stderr)
	took := time.Since(began)
	dirs, _ := filepath.Glob(filepath.Join(out, "*", results.RunFile))
	require.Len(t, dirs, 1, "one run folder; stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
	t.Logf("chaosrun %v: exit %d in %s\n%s%s", args, code, took.Round(100*time.Millisecond), stdout.String(), stderr.String())
	return code, filepath.Dir(dirs[0]), took
}

// bufferWriter is a bytes.Buffer safe for the runner's goroutines.
type bufferWriter struct {
	mu sync.Mutex
	b  []byte
}

func (w *bufferWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	return len(p), nil
}

func (w *bufferWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// runOf reads a run folder's run.json.
func runOf(t *testing.T, dir string) results.Run {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, results.RunFile))
	require.NoError(t, err)
	var run results.Run
	require.NoError(t, json.Unmarshal(b, &run))
	return run
}

// namespacesOf lists the namespaces of a run, by its label.
func namespacesOf(t *testing.T, f kubeFixture, runID string) []string {
	t.Helper()
	list, err := f.cs.CoreV1().Namespaces().List(context.Background(),
		metav1.ListOptions{LabelSelector: kube.LabelManaged + "=1," + kube.LabelRun + "=" + runID})
	require.NoError(t, err)
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name+" ("+string(ns.Status.Phase)+")")
	}
	return names
}

// TestKubeRunsTheIncidentsAsTheLocalRuntimeDoes runs the two incidents on
// the cluster and on the local runtime: both meet their expectations on
// both, with the same verdict, violations and counts of charges,
// duplicates and sessions, and nothing of the run is left in the cluster.
func TestKubeRunsTheIncidentsAsTheLocalRuntimeDoes(t *testing.T) {
	f := needKube(t)
	files := []string{"../../experiments/double-charge-lb-idle.yaml", "../../experiments/silent-loss-evicted-resume.yaml"}
	ctx := context.Background()
	kubeOut, localOut := t.TempDir(), t.TempDir()
	code, kubeDir, kubeTook := kubeRun(ctx, t, f, kubeOut, append([]string{"--parallel", "2"}, files...)...)
	assert.Equal(t, exitMet, code)
	code, localDir, localTook := timedRun(ctx, t, localOut, append([]string{"run", "-q", "--parallel", "2", "--out", localOut}, files...)...)
	assert.Equal(t, exitMet, code)
	t.Logf("wall: kubernetes %s, local %s", kubeTook.Round(100*time.Millisecond), localTook.Round(100*time.Millisecond))

	kubeRunRec, localRunRec := runOf(t, kubeDir), runOf(t, localDir)
	assert.Equal(t, "kubernetes", kubeRunRec.Runtime)
	require.Len(t, kubeRunRec.Results, 2)
	for i, kx := range kubeRunRec.Results {
		lx := localRunRec.Results[i]
		require.Equal(t, lx.Name, kx.Name)
		assert.True(t, kx.Met, "%s on kubernetes: %v %s", kx.Name, kx.Reasons, kx.Error)
		kv, err := check.LoadVerdict(filepath.Join(kubeDir, kx.Name, check.VerdictFile))
		require.NoError(t, err)
		lv, err := check.LoadVerdict(filepath.Join(localDir, lx.Name, check.VerdictFile))
		require.NoError(t, err)
		assert.Equal(t, lv.Verdict, kv.Verdict, kx.Name)
		assert.Equal(t, lv.Violations, kv.Violations, kx.Name)
		assert.Equal(t, lv.Figures.Charges, kv.Figures.Charges, kx.Name+": charges")
		assert.Equal(t, lv.Figures.Duplicates, kv.Figures.Duplicates, kx.Name+": duplicates")
		assert.Equal(t, lv.Figures.Sessions, kv.Figures.Sessions, kx.Name+": sessions")
		assert.Equal(t, lv.Figures.EventsEmitted, kv.Figures.EventsEmitted, kx.Name+": events emitted")
		t.Logf("%s: kubernetes %s %v %+v; local %s %v %+v", kx.Name, kv.Verdict, kv.Violations, kv.Figures, lv.Verdict, lv.Violations, lv.Figures)
		for _, file := range []string{"wire.jsonl", "history.jsonl", "ledger.jsonl", "logs/server.log", "logs/proxy.log", "state/server/agent.json"} {
			assert.FileExists(t, filepath.Join(kubeDir, kx.Name, file), "collected from the cluster")
		}
	}
	assert.Empty(t, namespacesOf(t, f, kubeRunRec.ID), "every namespace of the run is gone after Close")
}

// TestKubeKeepsAServersStateAcrossItsPods restarts and crashes a server
// with a file event store: each restart is a new pod on the same folder,
// and the experiments meet their expectations as they do locally.
func TestKubeKeepsAServersStateAcrossItsPods(t *testing.T) {
	f := needKube(t)
	out := t.TempDir()
	code, dir, _ := kubeRun(context.Background(), t, f, out, "--parallel", "2",
		"../../experiments/server-restart-file-store.yaml", "../../experiments/server-crash-file-store.yaml")
	assert.Equal(t, exitMet, code)
	run := runOf(t, dir)
	for _, x := range run.Results {
		assert.True(t, x.Met, "%s: %v %s", x.Name, x.Reasons, x.Error)
	}
	assert.Empty(t, namespacesOf(t, f, run.ID))
}

// TestKubeLeavesNothingWhenARunIsInterrupted cancels a run while its
// experiment runs on the cluster: the namespace is deleted all the same,
// and what the agents wrote so far is collected.
func TestKubeLeavesNothingWhenARunIsInterrupted(t *testing.T) {
	f := needKube(t)
	out := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	seen := make(chan string, 1)
	go func() { // cancel once the experiment's client is running
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for range tick.C {
			if ctx.Err() != nil {
				return
			}
			runs, _ := filepath.Glob(filepath.Join(out, "*"))
			if len(runs) != 1 {
				continue
			}
			id := filepath.Base(runs[0])
			pods, err := f.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: kube.LabelRun + "=" + id + "," + kube.LabelRole + "=client"})
			if err == nil && len(pods.Items) > 0 && pods.Items[0].Status.Phase == "Running" {
				seen <- pods.Items[0].Namespace
				time.Sleep(2 * time.Second)
				cancel()
				return
			}
		}
	}()
	code, dir, _ := kubeRun(ctx, t, f, out, "../../experiments/double-charge-lb-idle.yaml")
	var ns string
	select {
	case ns = <-seen:
	default:
		t.Fatal("the run ended before its client ran")
	}
	assert.Equal(t, exitInterrupted, code)
	run := runOf(t, dir)
	assert.True(t, run.Interrupted)
	assert.Empty(t, namespacesOf(t, f, run.ID), "namespace %s is gone", ns)
	assert.FileExists(t, filepath.Join(dir, "double-charge-lb-idle", "logs", "proxy.log"))
}

// TestKubeAgentsPauseCrashAndComeBackOnTheSamePort drives the runtime
// itself: a ledger agent frozen by SIGSTOP answers nothing until thawed; a
// crash (SIGKILL inside the pod) and a restart bring up a new pod that
// finds the records the last one kept and is reached on the same local
// port; Close hands the folder back and leaves no namespace.
func TestKubeAgentsPauseCrashAndComeBackOnTheSamePort(t *testing.T) {
	f := needKube(t)
	ctx := context.Background()
	cluster, err := kube.Connect(ctx, f.kubeconfig)
	require.NoError(t, err)
	runID := "gotest-" + fmt.Sprint(time.Now().UnixNano()%1e6)
	rt, err := kube.New(ctx, cluster, kube.Options{RunID: runID, Image: f.image, ExperimentName: t.Name()})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			_ = rt.Close()
		}
	})
	dir := t.TempDir()
	p, err := rt.Start(ctx, agentSpecLedger(dir))
	require.NoError(t, err)
	url := p.URL()
	require.NotEmpty(t, url)
	require.NotEmpty(t, p.PeerAddr())
	hc := &http.Client{Timeout: 2 * time.Second}
	require.NoError(t, postCharge(hc, url, "o-1"))

	require.NoError(t, p.Pause(ctx))
	assert.Error(t, postCharge(hc, url, "o-2"), "a paused ledger answers nothing")
	require.NoError(t, p.Resume(ctx))
	require.Eventually(t, func() bool { return postCharge(hc, url, "o-3") == nil }, 10*time.Second, 100*time.Millisecond)

	began := time.Now()
	require.NoError(t, p.Restart(ctx, false))
	t.Logf("crash and restart took %s", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, url, p.URL(), "the same local port across pods")
	n, err := recordCount(hc, url)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, n, 2, "the records of the last pod are in the new one's store")

	require.NoError(t, rt.Close())
	closed = true
	assert.FileExists(t, filepath.Join(dir, "ledger-state", "ledger.log"), "the folder handed back")
	assert.Empty(t, namespacesOf(t, f, runID))
}

// agentSpecLedger is a ledger agent whose folder comes back under dir.
func agentSpecLedger(dir string) agent.Spec {
	return agent.Spec{Role: agent.RoleLedger, Port: 8080, Serves: true, Args: []string{"--store", "ledger.log"},
		StateDir: filepath.Join(dir, "ledger-state"), LogPath: filepath.Join(dir, "ledger.log")}
}

// postCharge records one charge in the ledger at url, within two seconds.
func postCharge(_ *http.Client, url, order string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return sideeffects.NewClient(url).Record(ctx, sideeffects.Record{Kind: sideeffects.KindCharge, OrderID: order, AmountCents: 100, Tool: "charge"})
}

// recordCount is how many records the ledger at url holds.
func recordCount(_ *http.Client, url string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	recs, err := sideeffects.NewClient(url).Records(ctx)
	return len(recs), err
}

// TestKubernetesRefusesWhatItCannotRun: before anything runs (no cluster
// is needed), an experiment the kubernetes runtime cannot run is refused
// at the setting that asks for it, with the runtime's reason; a program it
// would refuse is not looked for on this machine.
func TestKubernetesRefusesWhatItCannotRun(t *testing.T) {
	tests := []struct {
		name, replace, with, want string
	}{
		{"a server's own image", "client:", "server: {target: image, image: example/mcp:1}\nclient:",
			":4:18: server.target: image runs only on the docker runtime (--runtime docker), not on kubernetes: the kubernetes runtime runs only chaosrun's own agent image"},
		{"a program of the user's", "client:", "server: {target: command, command: [bin/shop, --addr, \"{addr}\"]}\nclient:",
			"server.command[0]: a program of your own (bin/shop) runs only on the local or docker runtime (--runtime local or docker), not on kubernetes: an agent's pod holds only the chaosrun binary"},
		{"a fixed address", "client:", "server: {target: command, command: [/bin/true], listen: \"127.0.0.1:9000\"}\nclient:",
			"server.listen: a fixed address runs only on the local runtime (--runtime local), not on kubernetes: in a pod the server listens on the address it is given"},
		{"a shared store", "client:", "server: {event_store: redis}\nclient:",
			"server.event_store: redis runs only on the local runtime (--runtime local), not on kubernetes: nginx, HAProxy and redis-server run on the runner's loopback, which pods cannot reach"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeExperiment(t, strings.Replace(validExperiment, tt.replace, tt.with, 1))
			code, _, stderr := chaosrun(t, "run", "--runtime", "kubernetes", "--out", t.TempDir(), path)
			assert.Equal(t, exitInvalid, code)
			assert.Contains(t, stderr, tt.want)
			assert.NotContains(t, stderr, "does not exist")
		})
	}
}

// TestKubeCleanRemovesWhatAKilledRunnerLeft leaves an experiment's
// namespace, with an agent and its folder on the node, as a runner killed
// with SIGKILL would; chaosrun clean --runtime kubernetes --run ID removes
// the folder and the namespace.
func TestKubeCleanRemovesWhatAKilledRunnerLeft(t *testing.T) {
	f := needKube(t)
	ctx := context.Background()
	cluster, err := kube.Connect(ctx, f.kubeconfig)
	require.NoError(t, err)
	runID := "gotest-" + fmt.Sprint(time.Now().UnixNano()%1e6)
	rt, err := kube.New(ctx, cluster, kube.Options{RunID: runID, Image: f.image, ExperimentName: t.Name()})
	require.NoError(t, err)
	t.Cleanup(func() { _ = rt.Close() }) // its namespace is gone by then: this only stops its watches
	_, err = rt.Start(ctx, agentSpecLedger(t.TempDir()))
	require.NoError(t, err)
	require.Len(t, namespacesOf(t, f, runID), 1)
	folder := filepath.Join(kube.DefaultStateRoot, rt.Namespace())
	onThisNode := false
	if _, err := os.Stat(folder); err == nil {
		onThisNode = true // the node is this machine: its folder can be seen
	}

	code, stdout, stderr := chaosrun(t, "clean", "--runtime", "kubernetes", "--kubeconfig", f.kubeconfig, "--run", runID)
	require.Equal(t, exitMet, code, stderr)
	assert.Equal(t, "removed 1 namespaces, the folders of 1 experiments\n", stdout)
	assert.Empty(t, namespacesOf(t, f, runID))
	if onThisNode {
		assert.NoDirExists(t, folder)
	}
}

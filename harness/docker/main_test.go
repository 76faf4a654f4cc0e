package docker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// The tests run against the real Docker daemon. Without one they skip,
// unless CHAOSRUN_REQUIRE_DOCKER=1 makes them fail.

var (
	dockerErr error  // why the daemon is unusable, nil when it is usable
	testRunID string // LabelRun of everything these tests create
	binDir    string // static binaries built for the tests

	fixOnce sync.Once
	fix     fixture
	images  []string // tags the tests built, removed at the end
)

// fixture is the fake agent image shared by the tests.
type fixture struct {
	agentBin  string
	image     string
	buildTime time.Duration
	err       error
}

func TestMain(m *testing.M) {
	testRunID = "gotest-" + randomHex(4)
	dockerErr = probeDocker()
	code := m.Run()
	if dockerErr == nil {
		if err := cleanupAfterTests(); err != nil {
			fmt.Fprintln(os.Stderr, "cleanup:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func probeDocker() error {
	p, err := newProvider(slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = p.Client().Ping(ctx, client.PingOptions{})
	return err
}

func cleanupAfterTests() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := Clean(ctx, testRunID); err != nil {
		return err
	}
	p, err := newProvider(slog.New(slog.DiscardHandler))
	if err != nil {
		return err
	}
	defer p.Close()
	for _, tag := range images {
		// A tag built again by a repeated test (-count) is listed twice.
		_, err := p.Client().ImageRemove(ctx, tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			return err
		}
	}
	if binDir != "" {
		return os.RemoveAll(binDir)
	}
	return nil
}

// needDocker skips (or fails, under CHAOSRUN_REQUIRE_DOCKER=1) without a
// daemon, and returns the fake agent image, built on first use.
func needDocker(t testing.TB) fixture {
	t.Helper()
	if dockerErr != nil {
		if os.Getenv("CHAOSRUN_REQUIRE_DOCKER") == "1" {
			t.Fatalf("Docker daemon unreachable and CHAOSRUN_REQUIRE_DOCKER=1: %v", dockerErr)
		}
		t.Skipf("Docker daemon unreachable (CHAOSRUN_REQUIRE_DOCKER=1 makes this a failure): %v", dockerErr)
	}
	fixOnce.Do(func() {
		fix.agentBin, fix.err = goBuild("fakeagent")
		if fix.err != nil {
			return
		}
		start := time.Now()
		fix.image, fix.err = buildImage(context.Background(), fix.agentBin, slog.New(slog.DiscardHandler))
		fix.buildTime = time.Since(start)
		images = append(images, fix.image)
	})
	require.NoError(t, fix.err)
	return fix
}

// goBuild builds testdata/<name> as a static linux binary.
func goBuild(name string) (string, error) {
	if binDir == "" {
		dir, err := os.MkdirTemp("", "chaosrun-docker-test-")
		if err != nil {
			return "", err
		}
		binDir = dir
	}
	out := filepath.Join(binDir, name)
	cmd := exec.Command("go", "build", "-trimpath", "-o", out, "./testdata/"+name)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", name, err, msg)
	}
	return out, nil
}

// env is one runtime of a test with a folder for its agents' state and logs.
type env struct {
	t   testing.TB
	r   *Runtime
	dir string
}

func newEnv(t testing.TB, opts Options) *env {
	t.Helper()
	f := needDocker(t)
	dir := t.TempDir() // made before Close is registered, so removed after it ran
	opts.RunID, opts.Image, opts.ExperimentName = testRunID, f.image, t.Name()
	r, err := New(context.Background(), opts)
	require.NoError(t, err)
	r.readyTimeout = 10 * time.Second
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return &env{t: t, r: r, dir: dir}
}

func (e *env) start(spec agent.Spec) agent.Process {
	e.t.Helper()
	e.fill(&spec)
	p, err := e.r.Start(context.Background(), spec)
	require.NoError(e.t, err)
	return p
}

func (e *env) fill(spec *agent.Spec) {
	spec.StateDir = filepath.Join(e.dir, spec.Role+"-state")
	spec.LogPath = filepath.Join(e.dir, spec.Role+".log")
}

func server() agent.Spec {
	return agent.Spec{Role: agent.RoleServer, Serves: true, Port: 8080}
}

// idOf returns the token the agent behind p answers on /id.
func idOf(t testing.TB, p agent.Process) string {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.URL() + "/id")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func waitExit(t *testing.T, p agent.Process) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	return code
}

// labelled counts the containers, networks and volumes whose label key has
// value.
func labelled(t *testing.T, key, value string) Removed {
	t.Helper()
	p, err := newProvider(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	ctx, f := context.Background(), labelFilter(key, value)
	cs, err := p.Client().ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	require.NoError(t, err)
	ns, err := p.Client().NetworkList(ctx, client.NetworkListOptions{Filters: f})
	require.NoError(t, err)
	vs, err := p.Client().VolumeList(ctx, client.VolumeListOptions{Filters: f})
	require.NoError(t, err)
	return Removed{Containers: len(cs.Items), Networks: len(ns.Items), Volumes: len(vs.Items)}
}

func lines(s string) int { return len(strings.Fields(s)) }

package docker

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
)

func TestImageIsBuiltOnceAndReused(t *testing.T) {
	f := needDocker(t)
	t.Logf("image %s built in %s", f.image, f.buildTime.Round(time.Millisecond))
	p, err := newProvider(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	before, err := p.Client().ImageInspect(context.Background(), f.image)
	require.NoError(t, err)
	assert.Equal(t, AgentUser, before.Config.User, "agents run as a non-root user")
	assert.Equal(t, []string{"/chaosrun"}, before.Config.Entrypoint)

	var logged bytes.Buffer
	start := time.Now()
	tag, err := buildImage(context.Background(), f.agentBin, slog.New(slog.NewTextHandler(&logged, nil)))
	require.NoError(t, err)
	t.Logf("second BuildImage took %s", time.Since(start).Round(time.Millisecond))
	assert.Equal(t, f.image, tag)
	assert.Contains(t, logged.String(), "docker image reused")
	after, err := p.Client().ImageInspect(context.Background(), tag)
	require.NoError(t, err)
	assert.Equal(t, before.ID, after.ID, "the image was not built again")
}

func TestAgentsReachEachOtherByAlias(t *testing.T) {
	e := newEnv(t, Options{})
	began := time.Now()
	srv := e.start(server())
	t.Logf("container start to URL: %s", time.Since(began).Round(time.Millisecond))
	u, err := url.Parse(srv.URL())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", u.Hostname(), "the runner on the host reaches agents on loopback")
	assert.Equal(t, "server:8080", srv.PeerAddr())
	id := idOf(t, srv)

	cl := e.start(agent.Spec{Role: agent.RoleClient, Args: []string{"--peer", srv.PeerAddr()}})
	assert.Equal(t, 0, waitExit(t, cl))
	got := filepath.Join(e.dir, "peer")
	require.NoError(t, cl.CopyOut(context.Background(), "peer", got), "CopyOut works after the container exited")
	assert.Equal(t, id, readFile(t, got), "the client reached the server by its alias")
	require.Error(t, cl.CopyOut(context.Background(), "../etc/passwd", got))

	log := readFile(t, filepath.Join(e.dir, "server.log"))
	assert.Contains(t, log, "fake server starting", "stderr reaches the log")
	assert.Contains(t, log, "serving", "stdout after the URL line reaches the log")
	assert.NotContains(t, log, "http://", "the URL line is consumed, not logged")
}

// TestTheConfigurationIsInTheStateFolder: Spec.Config reaches the agent as
// agent.json in its state folder, which it can still write to, and comes
// back with the state folder for the results.
func TestTheConfigurationIsInTheStateFolder(t *testing.T) {
	e := newEnv(t, Options{})
	config := []byte(`{"target": "naive"}`)
	cl := e.start(agent.Spec{Role: agent.RoleClient, Config: config})
	require.Equal(t, 0, waitExit(t, cl))
	seen := filepath.Join(e.dir, "seen")
	require.NoError(t, cl.CopyOut(context.Background(), "config-seen", seen))
	assert.Equal(t, string(config), readFile(t, seen), "the agent read it from its state folder")
	require.NoError(t, cl.Stop(context.Background(), true))
	assert.Equal(t, string(config), readFile(t, filepath.Join(e.dir, "client-state", agent.ConfigFile)), "it comes back with the state folder")
	assert.Equal(t, 1, lines(readFile(t, filepath.Join(e.dir, "client-state", "starts"))), "the agent wrote to its state folder beside it")
}

func TestAgentContainersAreHardenedLabelledAndIsolated(t *testing.T) {
	e := newEnv(t, Options{})
	p := e.start(server()).(*process)
	res, err := e.r.cli.ContainerInspect(context.Background(), p.ctr.GetContainerID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	c := res.Container
	assert.True(t, c.HostConfig.ReadonlyRootfs)
	assert.Equal(t, []string{"ALL"}, c.HostConfig.CapDrop)
	assert.Equal(t, AgentUser, c.Config.User)
	assert.Len(t, c.NetworkSettings.Networks, 1, "on the experiment's network only")
	assert.Contains(t, c.NetworkSettings.Networks[e.r.Network()].Aliases, "server")
	for _, l := range []string{LabelManaged, LabelRun, LabelRuntime} {
		assert.NotEmpty(t, c.Config.Labels[l], l)
	}
	require.Len(t, c.Mounts, 1)
	vol, err := e.r.cli.VolumeInspect(context.Background(), c.Mounts[0].Name, client.VolumeInspectOptions{})
	require.NoError(t, err)
	assert.Equal(t, e.r.id, vol.Volume.Labels[LabelRuntime], "the state volume carries the labels too")
}

func TestRestartKeepsStateAndAlias(t *testing.T) {
	e := newEnv(t, Options{})
	srv := e.start(server())
	prev := idOf(t, srv)
	for _, graceful := range []bool{true, false} {
		began := time.Now()
		require.NoError(t, srv.Restart(context.Background(), graceful))
		t.Logf("restart (graceful=%v) to URL: %s", graceful, time.Since(began).Round(time.Millisecond))
		now := idOf(t, srv)
		assert.NotEqual(t, prev, now, "a new incarnation serves after the restart")
		prev = now
	}
	starts := filepath.Join(e.dir, "starts")
	require.NoError(t, srv.CopyOut(context.Background(), "starts", starts))
	assert.Equal(t, 3, lines(readFile(t, starts)), "the state volume outlives restarts")

	cl := e.start(agent.Spec{Role: agent.RoleClient, Args: []string{"--peer", srv.PeerAddr()}})
	require.Equal(t, 0, waitExit(t, cl))
	got := filepath.Join(e.dir, "peer")
	require.NoError(t, cl.CopyOut(context.Background(), "peer", got))
	assert.Equal(t, prev, readFile(t, got), "the alias leads to the restarted agent")
	assert.Contains(t, readFile(t, filepath.Join(e.dir, "server.log")), "fake agent stopping",
		"a graceful restart lets the agent handle SIGTERM")
}

func TestPauseFreezesAndResumeThaws(t *testing.T) {
	e := newEnv(t, Options{})
	srv := e.start(server())
	require.NoError(t, srv.Pause(context.Background()))
	c := http.Client{Timeout: 300 * time.Millisecond}
	_, err := c.Get(srv.URL() + "/id")
	require.Error(t, err, "a paused agent does not answer")
	require.NoError(t, srv.Resume(context.Background()))
	idOf(t, srv)

	require.NoError(t, srv.Pause(context.Background()))
	require.NoError(t, srv.Stop(context.Background(), true), "a paused agent can be stopped")
	require.ErrorIs(t, srv.Pause(context.Background()), agent.ErrNotRunning)
	assert.FileExists(t, filepath.Join(e.dir, "server-state", "starts"), "Stop copies the state folder out")
}

func TestWaitIgnoresPlannedExitsAndReportsOwnExit(t *testing.T) {
	e := newEnv(t, Options{})
	cl := e.start(agent.Spec{Role: agent.RoleClient, Args: []string{"--exit", "3", "--sleep", "1500ms"}})
	// A client prints no URL, so Start returns before it has run; crash it
	// only once it has recorded its start, else the crash may land first.
	logPath := filepath.Join(e.dir, "client.log")
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(logPath)
		return bytes.Contains(b, []byte("fake client running"))
	}, 10*time.Second, 20*time.Millisecond, "the first incarnation starts")
	require.NoError(t, cl.Restart(context.Background(), false), "a crash the harness caused")
	assert.Equal(t, 3, waitExit(t, cl))

	starts := filepath.Join(e.dir, "starts")
	require.NoError(t, cl.CopyOut(context.Background(), "starts", starts))
	assert.Equal(t, 2, lines(readFile(t, starts)))
	log := readFile(t, filepath.Join(e.dir, "client.log"))
	assert.Equal(t, 2, bytes.Count([]byte(log), []byte("fake client starting")), "the log is appended across restarts")
}

func TestProxyAPIIsPublishedOnTheFixedHostPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())

	e := newEnv(t, Options{ProxyAPIHostPort: port})
	proxy := e.start(agent.Spec{Role: agent.RoleProxy, Serves: true, Port: 8474})
	assert.Equal(t, "http://127.0.0.1:"+strconv.Itoa(port), proxy.URL())
	idOf(t, proxy)
}

func TestAgentThatDoesNotServeIsReported(t *testing.T) {
	e := newEnv(t, Options{})
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"exits early":   {[]string{"--exit", "1"}, "exited before it was ready"},
		"wrong address": {[]string{"--print", "http://0.0.0.0:9999"}, "instead of its URL on port 8080"},
	} {
		t.Run(name, func(t *testing.T) {
			role := agent.RoleClient
			if name == "wrong address" {
				role = agent.RoleLedger
			}
			spec := agent.Spec{Role: role, Serves: true, Port: 8080, Args: tc.args}
			e.fill(&spec)
			_, err := e.r.Start(context.Background(), spec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestCloseRemovesEverything(t *testing.T) {
	e := newEnv(t, Options{})
	e.start(server())
	e.start(agent.Spec{Role: agent.RoleClient, Args: []string{"--sleep", "1m"}})
	require.Equal(t, Removed{Containers: 2, Networks: 1, Volumes: 2}, labelled(t, LabelRuntime, e.r.id))

	require.NoError(t, e.r.Close())
	assert.Equal(t, Removed{}, labelled(t, LabelRuntime, e.r.id))
	assert.FileExists(t, filepath.Join(e.dir, "server-state", "starts"), "Close copies state folders out")
	require.NoError(t, e.r.Close(), "Close is idempotent")
	_, err := e.r.Start(context.Background(), server())
	require.Error(t, err)
}

func TestCancellingTheContextCleansUp(t *testing.T) {
	needDocker(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r, err := New(ctx, Options{RunID: testRunID, Image: fix.image, ExperimentName: "cancel"})
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = r.Start(ctx, agent.Spec{Role: agent.RoleServer, Serves: true, Port: 8080,
		StateDir: filepath.Join(dir, "state"), LogPath: filepath.Join(dir, "log")})
	require.NoError(t, err)
	cancel()
	require.Eventually(t, func() bool { return labelled(t, LabelRuntime, r.id) == Removed{} },
		30*time.Second, 100*time.Millisecond, "cancelling New's context removes everything")
	require.NoError(t, r.Close())
}

func TestCleanRemovesWhatACrashedRunLeft(t *testing.T) {
	f := needDocker(t)
	run := "gotest-crashed-" + randomHex(4)
	r, err := New(context.Background(), Options{RunID: run, Image: f.image, ExperimentName: "crashed"})
	require.NoError(t, err)
	dir := t.TempDir()
	_, err = r.Start(context.Background(), agent.Spec{Role: agent.RoleServer, Serves: true, Port: 8080,
		LogPath: filepath.Join(dir, "log")})
	require.NoError(t, err)

	removed, err := Clean(context.Background(), run)
	require.NoError(t, err)
	assert.Equal(t, Removed{Containers: 1, Networks: 1, Volumes: 1}, removed)
	assert.Equal(t, Removed{}, labelled(t, LabelRun, run))
	assert.NoError(t, r.Close(), "closing after a clean finds nothing left to fail on")
}

func TestStartRejectsAServingAgentWithoutAPort(t *testing.T) {
	e := newEnv(t, Options{})
	_, err := e.r.Start(context.Background(), agent.Spec{Role: agent.RoleServer, Serves: true})
	require.ErrorContains(t, err, "needs the port")
}

func TestNewNeedsAnImageOrABinary(t *testing.T) {
	needDocker(t)
	_, err := New(context.Background(), Options{RunID: testRunID})
	require.ErrorContains(t, err, "neither an image nor a binary")
	_, err = New(context.Background(), Options{RunID: testRunID, Image: "chaosrun:does-not-exist"})
	require.ErrorContains(t, err, "chaosrun:does-not-exist")
	_, err = New(context.Background(), Options{Image: fix.image})
	require.ErrorContains(t, err, "run id")
}

// TestRunnerInsideAContainerReachesAgentsByName runs the runtime the way
// the docker-compose demo does: from a container with the Docker socket,
// starting agents as sibling containers.
func TestRunnerInsideAContainerReachesAgentsByName(t *testing.T) {
	f := needDocker(t)
	bin, err := goBuild("inside")
	require.NoError(t, err)
	image, err := buildImage(context.Background(), bin, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	images = append(images, image)

	out, code := runInside(t, image, "-image", f.image, "-run", testRunID)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `http://chaosrun-inside-[0-9a-f]{8}-server:8080 [0-9a-f]{16}`, out)
	assert.Equal(t, Removed{}, labelled(t, LabelExperiment, "inside"), "the runner in a container cleaned up")
}

// runInside runs image as root with the Docker socket mounted and returns
// its output and exit code.
func runInside(t *testing.T, image string, args ...string) (string, int) {
	t.Helper()
	p, err := newProvider(slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer p.Close()
	cli, ctx := p.Client(), context.Background()
	name := "chaosrun-gotest-inside-" + randomHex(4)
	created, err := cli.ContainerCreate(ctx, insideConfig(image, name, args))
	require.NoError(t, err)
	defer cli.ContainerRemove(ctx, created.ID, client.ContainerRemoveOptions{Force: true})
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: "next-exit"})
	_, err = cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{})
	require.NoError(t, err)
	var code int
	select {
	case res := <-wait.Result:
		code = int(res.StatusCode)
	case err := <-wait.Error:
		require.NoError(t, err)
	case <-time.After(90 * time.Second):
		t.Fatal("the runner in a container did not finish")
	}
	logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
	require.NoError(t, err)
	defer logs.Close()
	var out bytes.Buffer
	_, err = stdcopy.StdCopy(&out, &out, logs)
	require.NoError(t, err)
	return out.String(), code
}

func insideConfig(image, name string, args []string) client.ContainerCreateOptions {
	return client.ContainerCreateOptions{
		Name: name,
		Config: &container.Config{
			Image:  image,
			Cmd:    args,
			User:   "0:0", // the Docker socket is root's
			Labels: map[string]string{LabelManaged: "1", LabelRun: testRunID},
		},
		HostConfig: &container.HostConfig{
			Binds: []string{"/var/run/docker.sock:/var/run/docker.sock"},
			Tmpfs: map[string]string{"/tmp": "rw"},
		},
	}
}

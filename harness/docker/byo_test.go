package docker

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

func TestOnlyTheServerIsReplacedByAnImage(t *testing.T) {
	image, err := imageOf(agent.Spec{Role: agent.RoleServer, Image: "me/srv:1"})
	require.NoError(t, err)
	assert.Equal(t, "me/srv:1", image)
	image, err = imageOf(agent.Spec{Role: agent.RoleServer})
	require.NoError(t, err)
	assert.Empty(t, image, "no image: the agent runs")
	_, err = imageOf(agent.Spec{Role: agent.RoleClient, Image: "x"})
	require.ErrorContains(t, err, "only the server agent can be an image, not the client")
}

func TestImageTargetEnvironmentIsTheContract(t *testing.T) {
	spec := agent.Spec{Role: agent.RoleServer, Port: 8080, Env: []string{"EXTRA=1"}, Image: "x",
		LedgerURL: "http://ledger:8080", Clock: runclock.FromUnixNano(1700000000000000000)}
	assert.Equal(t, map[string]string{
		"CHAOSRUN_LISTEN_ADDR":    "0.0.0.0:8080",
		"CHAOSRUN_LEDGER_URL":     "http://ledger:8080",
		"CHAOSRUN_BASE_UNIX_NANO": "1700000000000000000",
		"CHAOSRUN_STATE_DIR":      "/state",
		"EXTRA":                   "1",
	}, imageEnv(spec))
}

var (
	byoOnce  sync.Once
	byoImage string
	byoErr   error
)

// exampleImage builds examples/byo-server statically into a FROM scratch
// image with the runtime's own builder (its entrypoint is then the example,
// under the name /chaosrun), removed when the tests end.
func exampleImage(t *testing.T) string {
	t.Helper()
	needDocker(t)
	byoOnce.Do(func() {
		bin := filepath.Join(binDir, "byo-server")
		cmd := exec.Command("go", "build", "-trimpath", "-o", bin, "../../examples/byo-server")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		if out, err := cmd.CombinedOutput(); err != nil {
			byoErr = fmt.Errorf("go build examples/byo-server: %w\n%s", err, out)
			return
		}
		byoImage, byoErr = buildImage(context.Background(), bin, slog.New(slog.DiscardHandler))
		if byoErr == nil {
			images = append(images, byoImage)
		}
	})
	require.NoError(t, byoErr)
	return byoImage
}

func imageServer(image string) agent.Spec {
	return agent.Spec{Role: agent.RoleServer, Serves: true, Port: 8080, Image: image,
		LedgerURL: "http://ledger:8080", Clock: runclock.FromUnixNano(1700000000000000000)}
}

// mcpAnswers reports the status GET /mcp gets from the server behind p.
func mcpAnswers(t *testing.T, p agent.Process) int {
	t.Helper()
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(p.URL() + "/mcp")
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestImageTargetServesAndSurvivesRestartCrashAndPause(t *testing.T) {
	image := exampleImage(t)
	e := newEnv(t, Options{})
	began := time.Now()
	srv := e.start(imageServer(image))
	t.Logf("image target start to ready: %s", time.Since(began).Round(time.Millisecond))
	assert.Equal(t, "server:8080", srv.PeerAddr())
	status := mcpAnswers(t, srv)

	for _, graceful := range []bool{true, false} {
		require.NoError(t, srv.Restart(context.Background(), graceful))
		assert.Equal(t, status, mcpAnswers(t, srv), "serving again after a restart (graceful=%v)", graceful)
	}
	require.NoError(t, srv.Pause(context.Background()))
	c := http.Client{Timeout: 300 * time.Millisecond}
	_, err := c.Get(srv.URL() + "/mcp")
	require.Error(t, err, "a paused image does not answer")
	require.NoError(t, srv.Resume(context.Background()))
	mcpAnswers(t, srv)

	starts := filepath.Join(e.dir, "starts")
	require.NoError(t, srv.CopyOut(context.Background(), "starts", starts))
	assert.Equal(t, 3, strings.Count(readFile(t, starts), " 0.0.0.0:8080\n"),
		"three starts on the address of the contract, in a state folder that outlives restarts")
	log := readFile(t, filepath.Join(e.dir, "server.log"))
	assert.Regexp(t, `byo-server listening on \S+:8080, ledger "http://ledger:8080"`, log,
		"the image got the contract's environment; its output reaches the log, no URL line is taken from it")
	assert.Contains(t, log, "byo-server stopping", "a graceful restart lets the image handle SIGTERM")

	res, err := e.r.cli.ContainerInspect(context.Background(), srv.(*process).ctr.GetContainerID(), client.ContainerInspectOptions{})
	require.NoError(t, err)
	ctr := res.Container
	assert.False(t, ctr.HostConfig.ReadonlyRootfs, "an image target's root filesystem is writable")
	assert.Equal(t, []string{"ALL"}, ctr.HostConfig.CapDrop)
	assert.Equal(t, e.r.id, ctr.Config.Labels[LabelRuntime])
	assert.Contains(t, ctr.NetworkSettings.Networks[e.r.Network()].Aliases, "server")
	assert.Contains(t, ctr.Config.Env, "CHAOSRUN_STATE_DIR=/state")

	require.NoError(t, e.r.Close())
	assert.Equal(t, Removed{}, labelled(t, LabelRuntime, e.r.id), "Close removes the image target's container and volume")
}

func TestImageTargetThatDoesNotServeIsReported(t *testing.T) {
	f := needDocker(t)
	e := newEnv(t, Options{})
	spec := imageServer(f.image) // the fake agent, given no arguments, exits 2
	e.fill(&spec)
	_, err := e.r.Start(context.Background(), spec)
	require.ErrorContains(t, err, "exited before its port 8080 answered")

	spec = imageServer("chaosrun-gotest:no-such-image")
	e.fill(&spec)
	_, err = e.r.Start(context.Background(), spec)
	require.ErrorContains(t, err, "server.image chaosrun-gotest:no-such-image: not on the Docker daemon",
		"the image is looked up on the daemon, never pulled")
}

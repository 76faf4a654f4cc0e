package local

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain doubles as a fake agent: the runtime starts this test binary
// with "agent ROLE ..." arguments, exactly as it starts chaosrun.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "agent" {
		os.Exit(fakeAgent(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// fakeAgent serves "/pid" (answering its pid) and exits 0 on SIGTERM, or,
// for role "client", exits with --exit after --sleep.
func fakeAgent(role string, args []string) int {
	fs := flag.NewFlagSet(role, flag.ContinueOnError)
	addr := fs.String("addr", "", "")
	state := fs.String("state", "", "")
	fs.String("parent-pid", "", "")
	exit := fs.Int("exit", 0, "")
	sleep := fs.Duration("sleep", 0, "")
	if err := fs.Parse(args); err != nil {
		return 9
	}
	if err := os.WriteFile(filepath.Join(*state, "started"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return 8
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) != nil ||
		os.WriteFile(filepath.Join(*state, "nofile"), fmt.Appendf(nil, "%d %d", lim.Cur, lim.Max), 0o644) != nil {
		return 8
	}
	if config, err := os.ReadFile(filepath.Join(*state, agent.ConfigFile)); err == nil {
		if os.WriteFile(filepath.Join(*state, "config-seen"), config, 0o644) != nil {
			return 8
		}
	}
	if role == "client" {
		time.Sleep(*sleep)
		return *exit
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return 7
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	fmt.Printf("http://%s\n", ln.Addr())
	var held [][]byte
	var files []*os.File
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hold": // 32 MiB touched, and 20 more descriptors, held until exit
			b := make([]byte, 32<<20)
			for i := range b {
				b[i] = 1
			}
			held = append(held, b)
			for range 20 {
				f, err := os.Open(os.Args[0])
				if err != nil {
					w.WriteHeader(500)
					return
				}
				files = append(files, f)
			}
		}
		fmt.Fprint(w, os.Getpid())
	}))
	<-term
	return 0
}

func startFake(t *testing.T, rt *Runtime, spec agent.Spec) agent.Process {
	t.Helper()
	bin, err := os.Executable()
	require.NoError(t, err)
	rt.binary = bin
	dir := t.TempDir()
	spec.StateDir = filepath.Join(dir, "state")
	spec.LogPath = filepath.Join(dir, spec.Role+".log")
	p, err := rt.Start(context.Background(), spec)
	require.NoError(t, err)
	return p
}

func pidOf(t *testing.T, p agent.Process) string {
	t.Helper()
	resp, err := http.Get(p.URL() + "/pid")
	require.NoError(t, err)
	defer resp.Body.Close()
	var pid int
	_, err = fmt.Fscan(resp.Body, &pid)
	require.NoError(t, err)
	return strconv.Itoa(pid)
}

func TestTheConfigurationIsInTheStateFolderBeforeTheAgentStarts(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	config := []byte(`{"target": "reference"}`)
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true, Config: config})
	seen, err := os.ReadFile(filepath.Join(p.(*process).spec.StateDir, "config-seen"))
	require.NoError(t, err)
	assert.Equal(t, config, seen, "the agent found it when it started")
	assert.Equal(t, Name, rt.Capabilities().Runtime)
	assert.Positive(t, rt.Capabilities().OpenFiles, "its agents share the runner's limit")
}

func TestServingAgentRestartsOnTheSameAddress(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true})
	addr, first := p.PeerAddr(), pidOf(t, p)

	for _, graceful := range []bool{true, false} {
		require.NoError(t, p.Restart(context.Background(), graceful))
		assert.Equal(t, addr, p.PeerAddr(), "peers keep reaching the same address")
		now := pidOf(t, p)
		assert.NotEqual(t, first, now, "a new process serves after restart")
		first = now
	}
}

func TestWaitIgnoresPlannedExitsAndReportsOwnExit(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	p := startFake(t, rt, agent.Spec{Role: "client", Args: []string{"--exit", "3", "--sleep", "300ms"}})
	require.NoError(t, p.Restart(context.Background(), false)) // a crash the harness caused
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := p.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 3, code)
}

func TestAgentsInheritTheRaisedOpenFileLimit(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	lim, err := OpenFiles()
	if err != nil {
		t.Logf("open files limited to %d: %v", lim.Max, err)
	}
	assert.Equal(t, lim.Max, lim.Cur, "the soft limit is raised to the hard one")
	p := startFake(t, rt, agent.Spec{Role: "client"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = p.Wait(ctx)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(p.(*process).spec.StateDir, "nofile"))
	require.NoError(t, err)
	assert.Equal(t, fmt.Sprintf("%d %d", lim.Cur, lim.Max), string(b), "the agent starts with the runner's limit")
}

func TestUsageOfEveryIncarnation(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true})
	require.NoError(t, p.Restart(context.Background(), false))
	require.NoError(t, p.Stop(context.Background(), true))
	usage := p.(agent.Measured).Usage()
	require.Len(t, usage, 2, "one entry per exited incarnation")
	for i, u := range usage {
		assert.Equal(t, "server", u.Role)
		assert.Equal(t, i+1, u.Incarnation)
		assert.Positive(t, u.PeakRSSKiB, "peak memory is measured")
	}
}

func TestPauseFreezesAndResumeThaws(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true})
	require.NoError(t, p.Pause(context.Background()))
	c := http.Client{Timeout: 300 * time.Millisecond}
	_, err := c.Get(p.URL() + "/pid")
	require.Error(t, err, "a paused agent does not answer")
	require.NoError(t, p.Resume(context.Background()))
	pidOf(t, p)
}

func TestCloseKillsEveryAgent(t *testing.T) {
	rt := New("")
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true})
	pid, err := strconv.Atoi(pidOf(t, p))
	require.NoError(t, err)
	require.NoError(t, rt.Close())
	require.Error(t, syscall.Kill(pid, 0), "the agent process is gone after Close")
	_, err = rt.Start(context.Background(), agent.Spec{Role: "server"})
	require.Error(t, err)
	require.Error(t, p.Restart(context.Background(), false), "a closed runtime starts nothing, a restart included")
	require.Error(t, syscall.Kill(pid, 0))
}

func TestAgentThatNeverServesIsReported(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	bin, err := os.Executable()
	require.NoError(t, err)
	rt.binary = bin
	dir := t.TempDir()
	_, err = rt.Start(context.Background(), agent.Spec{Role: "client", Serves: true, Args: []string{"--exit", "1"},
		StateDir: dir, LogPath: filepath.Join(dir, "log")})
	require.ErrorContains(t, err, "exited before it was ready")
}

func TestSampleReadsTheRunningIncarnationsMemoryAndDescriptors(t *testing.T) {
	rt := New("")
	t.Cleanup(func() { rt.Close() })
	p := startFake(t, rt, agent.Spec{Role: "server", Serves: true})
	before, err := p.(agent.Sampled).Sample()
	require.NoError(t, err)
	assert.Equal(t, 1, before.Incarnation)
	assert.Equal(t, 1, before.Procs)
	assert.Positive(t, before.RSSKiB)
	assert.Positive(t, before.FDs)

	resp, err := http.Get(p.URL() + "/hold")
	require.NoError(t, err)
	resp.Body.Close()
	after, err := p.(agent.Sampled).Sample()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after.RSSKiB-before.RSSKiB, int64(30<<10), "32 MiB touched is resident")
	assert.GreaterOrEqual(t, after.FDs-before.FDs, 20, "20 files held open")

	require.NoError(t, p.Restart(context.Background(), false))
	again, err := p.(agent.Sampled).Sample()
	require.NoError(t, err)
	assert.Equal(t, 2, again.Incarnation)
	assert.Less(t, again.RSSKiB, after.RSSKiB, "a new incarnation holds none of the old one's memory")

	require.NoError(t, p.Stop(context.Background(), true))
	_, err = p.(agent.Sampled).Sample()
	assert.ErrorIs(t, err, agent.ErrNotRunning)
}

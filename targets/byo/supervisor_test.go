package byo

import (
	"context"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// TestMain doubles as a bring-your-own server: "fake-server [EXIT_AFTER]"
// listens where the contract says, exits 0 on SIGTERM, or exits 4 on its
// own after EXIT_AFTER; and as a client (see fakeClient).
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fake-server" {
		os.Exit(fakeServer(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == "fake-client" {
		os.Exit(fakeClient(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func fakeServer(args []string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	ln, err := net.Listen("tcp", os.Getenv(EnvListenAddr))
	if err != nil {
		return 7
	}
	defer ln.Close()
	var own <-chan time.Time
	if len(args) > 0 {
		d, err := time.ParseDuration(args[0])
		if err != nil {
			return 8
		}
		own = time.After(d)
	}
	select {
	case <-term:
		return 0
	case <-own:
		return 4
	}
}

// fake returns a Supervisor of the test binary as a fake server.
func fake(t *testing.T, args ...string) *Supervisor {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	s := &Supervisor{Command: append([]string{exe, "fake-server"}, args...),
		Env: Env{ListenAddr: "127.0.0.1:0", StateDir: t.TempDir()}, Output: os.Stderr, Drain: 5 * time.Second}
	t.Cleanup(func() { _ = s.Stop() })
	return s
}

func TestEnvIsTheContract(t *testing.T) {
	env := Env{ListenAddr: "0.0.0.0:8080", LedgerURL: "http://ledger:8080",
		Clock: runclock.FromUnixNano(1700000000000000000), StateDir: "/state"}
	assert.Equal(t, []string{
		"CHAOSRUN_LISTEN_ADDR=0.0.0.0:8080",
		"CHAOSRUN_LEDGER_URL=http://ledger:8080",
		"CHAOSRUN_BASE_UNIX_NANO=1700000000000000000",
		"CHAOSRUN_STATE_DIR=/state",
	}, env.Environ())
	env.Clock = runclock.Clock{}
	assert.Contains(t, env.Environ(), "CHAOSRUN_BASE_UNIX_NANO=", "no clock: the server counts from its own start")

	help := EnvHelp()
	for _, name := range []string{EnvListenAddr, EnvLedgerURL, EnvBase, EnvStateDir} {
		assert.Contains(t, help, "  "+name+" ", "the help names every variable")
	}
	assert.Len(t, strings.Split(help, "\n"), 4)
}

func TestCommandGetsTheContractEnvironment(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	script := `echo "$CHAOSRUN_LISTEN_ADDR|$CHAOSRUN_LEDGER_URL|$CHAOSRUN_BASE_UNIX_NANO|$CHAOSRUN_STATE_DIR|$(pwd)" > "$CHAOSRUN_STATE_DIR/env"; exit 3`
	s := &Supervisor{Command: []string{"sh", "-c", script}, Env: Env{ListenAddr: "127.0.0.1:0",
		LedgerURL: "http://127.0.0.1:9", Clock: runclock.FromUnixNano(1700000000000000000), StateDir: "state"}}
	err := s.Start(context.Background())
	require.ErrorContains(t, err, "exit status 3")

	state := filepath.Join(wd, "state")
	b, err := os.ReadFile(filepath.Join(state, "env"))
	require.NoError(t, err, "the state folder is created, relative to the working directory")
	fields := strings.Split(strings.TrimSpace(string(b)), "|")
	require.Len(t, fields, 5)
	host, port, err := net.SplitHostPort(fields[0])
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)
	assert.NotEqual(t, "0", port, "port 0 is replaced by a free port")
	assert.Equal(t, s.Addr(), fields[0])
	assert.Equal(t, []string{"http://127.0.0.1:9", "1700000000000000000", state, wd}, fields[1:],
		"ledger, clock and an absolute state folder; the command runs in the working directory")
}

func TestStartWithoutACommandFails(t *testing.T) {
	require.ErrorIs(t, (&Supervisor{}).Start(context.Background()), ErrNoCommand)
	require.NoError(t, (&Supervisor{}).Stop(), "Stop before Start does nothing")
}

func TestReadiness(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	listening := ln.Addr().String()
	free, err := pickAddr("127.0.0.1:0")
	require.NoError(t, err)
	tests := []struct {
		name string
		argv []string
		addr string
		want string // "" = ready
	}{
		{"listening", []string{"sleep", "30"}, listening, ""},
		{"exits first", []string{"sh", "-c", "exit 5"}, free, "exited before it listened on " + free + ": exit status 5; it printed nothing"},
		{"exits first, saying why", []string{"sh", "-c", "echo starting; echo 'bind: permission denied' >&2; exit 5"}, free,
			"exit status 5; its last output: starting | bind: permission denied"},
		{"never listens", []string{"sleep", "30"}, free, "did not listen on " + free + " within 200ms; it printed nothing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &Supervisor{Command: tc.argv, Env: Env{ListenAddr: tc.addr, StateDir: t.TempDir()},
				ReadyTimeout: 200 * time.Millisecond, Drain: time.Second}
			defer func() { _ = s.Stop() }()
			err := s.Start(context.Background())
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.want)
			select {
			case <-s.exited:
			default:
				t.Fatal("a command that failed to start is not left running")
			}
		})
	}
}

func TestStopKillsACommandIgnoringSIGTERMAfterTheDrain(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	s := &Supervisor{Command: []string{"sh", "-c", "trap '' TERM; exec sleep 30"},
		Env: Env{ListenAddr: ln.Addr().String(), StateDir: t.TempDir()}, Drain: 50 * time.Millisecond}
	require.NoError(t, s.Start(context.Background()))
	comm := "/proc/" + strconv.Itoa(s.cmd.Process.Pid) + "/comm"
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(comm)
		return err == nil && strings.TrimSpace(string(b)) == "sleep"
	}, 5*time.Second, time.Millisecond, "the shell ignores SIGTERM and has become sleep, which inherits that")
	began := time.Now()
	err = s.Stop()
	require.ErrorContains(t, err, "did not exit within 50ms of SIGTERM: killed")
	assert.Less(t, time.Since(began), 5*time.Second)
	assert.Contains(t, s.status(), "killed")
	assert.Equal(t, err, s.Stop(), "a second Stop returns the first one's result")
}

func TestStopIsIdempotentAndWaitsForTheExit(t *testing.T) {
	s := fake(t)
	require.NoError(t, s.Start(context.Background()))
	conn, err := net.Dial("tcp", s.Addr())
	require.NoError(t, err, "the command listens once Start has returned")
	conn.Close()
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Stop() })
	}
	wg.Wait()
	assert.Equal(t, []error{nil, nil, nil}, errs, "a command that exits on SIGTERM stops cleanly, however often it is asked")
	select {
	case <-s.exited:
	default:
		t.Fatal("Stop returned before the command exited")
	}
	assert.Equal(t, "exit status 0", s.status())
}

func TestServe(t *testing.T) {
	t.Run("until ctx ends", func(t *testing.T) {
		s := fake(t)
		require.NoError(t, s.Start(context.Background()))
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		require.NoError(t, s.Serve(ctx), "the end of ctx stops the command gracefully")
		assert.Equal(t, "exit status 0", s.status())
	})
	t.Run("until the command exits", func(t *testing.T) {
		s := fake(t, "100ms")
		require.NoError(t, s.Start(context.Background()))
		err := s.Serve(context.Background())
		require.ErrorContains(t, err, "exited while serving: exit status 4", "a server's own exit is an error")
	})
}

func TestPickAddr(t *testing.T) {
	got, err := pickAddr("127.0.0.1:0")
	require.NoError(t, err)
	_, port, _ := net.SplitHostPort(got)
	assert.NotEqual(t, "0", port)
	ln, err := net.Listen("tcp", got)
	require.NoError(t, err, "the picked port is free again")
	ln.Close()

	got, err = pickAddr("127.0.0.1:4242")
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1:4242", got, "a restart keeps its concrete address")
	_, err = pickAddr("no-port")
	require.Error(t, err)
	assert.Equal(t, "127.0.0.1:80", dialable("0.0.0.0:80"))
	assert.Equal(t, "127.0.0.1:80", dialable("[::]:80"))
	assert.Equal(t, "127.0.0.2:80", dialable("127.0.0.2:80"))
}

func TestExpandFillsTheAddressPlaceholders(t *testing.T) {
	tests := []struct {
		addr string
		args []string
		want []string
	}{
		{"127.0.0.1:8123", []string{"srv", "--port", "{port}"}, []string{"srv", "--port", "8123"}},
		{"127.0.0.1:8123", []string{"srv", "--listen={addr}"}, []string{"srv", "--listen=127.0.0.1:8123"}},
		{"0.0.0.0:80", []string{"srv", "http://{host}:{port}/mcp", "{port}{port}"}, []string{"srv", "http://0.0.0.0:80/mcp", "8080"}},
		{"127.0.0.1:1", []string{"srv", "{json: 1}", "{PORT}"}, []string{"srv", "{json: 1}", "{PORT}"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			assert.Equal(t, tc.want, Env{ListenAddr: tc.addr}.Expand(args))
			assert.Equal(t, tc.args, args, "Expand leaves its argument alone")
		})
	}
}

func TestStartGivesTheCommandItsAddressInItsArguments(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	out := filepath.Join(t.TempDir(), "argv")
	s := &Supervisor{Command: []string{"sh", "-c", `echo "$1 $2" > "$0"; exec sleep 30`, out, "--listen={addr}", "{port}"},
		Env: Env{ListenAddr: ln.Addr().String(), StateDir: t.TempDir()}, Drain: time.Second}
	t.Cleanup(func() { _ = s.Stop() })
	require.NoError(t, s.Start(context.Background()))
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(out)
		return err == nil && strings.TrimSpace(string(b)) == "--listen="+ln.Addr().String()+" "+port
	}, 5*time.Second, 10*time.Millisecond)
}

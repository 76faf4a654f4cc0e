package byo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// The bring-your-own client's environment, besides [EnvBase] and
// [EnvStateDir].
const (
	// EnvMCPURL is the MCP endpoint the client must use: the fault proxy's,
	// so every byte it sends and receives crosses the wire observer.
	EnvMCPURL = "CHAOSRUN_MCP_URL"
	// EnvOperations is the path of the operations file (see [Operations]):
	// what the client is to invoke.
	EnvOperations = "CHAOSRUN_OPERATIONS"
)

// OperationsFile is the operations file's name in the client's state
// folder.
const OperationsFile = "operations.json"

// Operations is what a bring-your-own client is asked to do: every logical
// client's operations, in order. A client that plays several logical
// clients names each in its requests (initialize's clientInfo.name, or the
// 2026-07-28 _meta client name) by its Client, so the wire tells them
// apart.
type Operations struct {
	Endpoint   string      `json:"endpoint"`
	Operations []Operation `json:"operations"`
}

// Operation is one tools/call to make: its tool and its arguments as they
// are to be sent (placeholders already filled in), and whether it may be
// invoked again safely.
type Operation struct {
	Client     string          `json:"client"`
	Call       string          `json:"call"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	Idempotent bool            `json:"idempotent"`
}

// ClientEnv is the contract's environment for one client.
type ClientEnv struct {
	MCPURL     string
	Operations string // path of the operations file
	// Clock is the run's base clock; a zero Clock leaves EnvBase empty.
	Clock    runclock.Clock
	StateDir string
}

// Environ returns e as KEY=value pairs.
func (e ClientEnv) Environ() []string {
	base := ""
	if !e.Clock.Base().IsZero() {
		base = e.Clock.String()
	}
	return []string{EnvMCPURL + "=" + e.MCPURL, EnvOperations + "=" + e.Operations, EnvBase + "=" + base, EnvStateDir + "=" + e.StateDir}
}

// PlaceholderURL, in a client command's arguments, is the MCP endpoint,
// as [EnvMCPURL] gives it (http://127.0.0.1:41234/mcp): for clients that
// take their server's URL as an argument. There [PlaceholderAddr],
// [PlaceholderHost] and [PlaceholderPort] are the endpoint's host:port,
// host and port.
const PlaceholderURL = "{url}"

// Expand returns args with every placeholder replaced by the part of
// e.MCPURL it names ({url}, {addr}, {host}, {port}); an argument may hold
// several, and text around them is kept ("--server=http://{addr}/"). args
// is not changed.
func (e ClientEnv) Expand(args []string) []string {
	addr := ""
	if u, err := url.Parse(e.MCPURL); err == nil {
		addr = u.Host
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		host, port = addr, ""
	}
	r := strings.NewReplacer(PlaceholderURL, e.MCPURL, PlaceholderAddr, addr, PlaceholderHost, host, PlaceholderPort, port)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// ClientExit is how a bring-your-own client ended, kept with the results.
type ClientExit struct {
	Code   int    `json:"code"`   // the exit code; -1 when it was killed or never started
	Status string `json:"status"` // the exit status in words
	// Stopped says the run ended before the client did, and it was told
	// to stop (SIGTERM, then SIGKILL).
	Stopped bool `json:"stopped,omitempty"`
	// TUS is when the client ended, on the run's clock (0 when the
	// contract's clock was not set).
	TUS int64 `json:"t_us,omitempty"`
	// Tail is the last lines the client wrote to its stdout and stderr.
	Tail []string `json:"tail,omitempty"`
}

// ExitFile is the name of the client's exit record in its state folder.
const ExitFile = "client-exit.json"

// clientStopGrace is how long a client told to stop may take before it is
// killed.
const clientStopGrace = 5 * time.Second

// RunClient writes ops to the operations file in env's state folder, runs
// argv (its placeholders filled in, see [ClientEnv.Expand]) with the
// contract's environment added to this process's, its output on out (its
// last lines also kept in the exit record), until it exits or ctx ends
// (then SIGTERM, and SIGKILL after a
// grace), and returns how it ended. An error is returned only when the
// client could not be started at all; how a started client ends is its
// own business, a finding for the verdict, not a failure of the harness.
func RunClient(ctx context.Context, argv []string, env ClientEnv, ops Operations, out io.Writer) (ClientExit, error) {
	if len(argv) == 0 {
		return ClientExit{Code: -1}, ErrNoCommand
	}
	if err := os.MkdirAll(env.StateDir, 0o755); err != nil {
		return ClientExit{Code: -1}, fmt.Errorf("client state folder: %w", err)
	}
	if env.Operations == "" {
		env.Operations = filepath.Join(env.StateDir, OperationsFile)
	}
	b, err := json.MarshalIndent(ops, "", "  ")
	if err == nil {
		err = os.WriteFile(env.Operations, b, 0o644)
	}
	if err != nil {
		return ClientExit{Code: -1}, fmt.Errorf("operations file: %w", err)
	}
	c := exec.Command(argv[0], env.Expand(argv[1:])...)
	c.Env = append(os.Environ(), env.Environ()...)
	said := newTail(tailLines)
	c.Stdout = io.MultiWriter(out, said)
	c.Stderr = c.Stdout
	c.WaitDelay = time.Second
	c.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := c.Start(); err != nil {
		return ClientExit{Code: -1, Status: err.Error()}, fmt.Errorf("start client command: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var exit ClientExit
	select {
	case err = <-done:
	case <-ctx.Done():
		exit.Stopped = true
		_ = c.Process.Signal(syscall.SIGTERM)
		select {
		case err = <-done:
		case <-time.After(clientStopGrace):
			_ = c.Process.Kill()
			err = <-done
		}
	}
	exit.Code, exit.Status, exit.Tail = 0, "exit status 0", said.Lines()
	if !env.Clock.Base().IsZero() {
		exit.TUS = env.Clock.Micros()
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		exit.Code, exit.Status = ee.ExitCode(), ee.Error()
	case err != nil:
		exit.Code, exit.Status = -1, err.Error()
	}
	return exit, nil
}

// SaveExit writes the exit record into dir.
func SaveExit(dir string, e ClientExit) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ExitFile), append(b, '\n'), 0o644)
}

// LoadExit reads the exit record from dir.
func LoadExit(dir string) (ClientExit, error) {
	b, err := os.ReadFile(filepath.Join(dir, ExitFile))
	if err != nil {
		return ClientExit{}, err
	}
	var e ClientExit
	if err := json.Unmarshal(b, &e); err != nil {
		return ClientExit{}, fmt.Errorf("%s: %w", ExitFile, err)
	}
	return e, nil
}

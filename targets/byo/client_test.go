package byo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// fakeClient is "fake-client CODE|hang|args ARG...": it prints its
// contract environment and the operations it read, then exits with CODE,
// waits for SIGTERM and exits 3, or prints its arguments and exits 0.
func fakeClient(args []string) int {
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	b, err := os.ReadFile(os.Getenv(EnvOperations))
	if err != nil {
		return 9
	}
	var ops Operations
	if json.Unmarshal(b, &ops) != nil {
		return 10
	}
	fmt.Printf("url=%s base=%s state=%s ops=%d first=%s\n", os.Getenv(EnvMCPURL), os.Getenv(EnvBase),
		os.Getenv(EnvStateDir), len(ops.Operations), ops.Operations[0].Call)
	switch args[0] {
	case "hang":
		<-term
		return 3
	case "args":
		fmt.Println(strings.Join(args[1:], " "))
		return 0
	}
	code, _ := strconv.Atoi(args[0])
	return code
}

func runFakeClient(t *testing.T, ctx context.Context, args ...string) (ClientExit, string, ClientEnv) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	env := ClientEnv{MCPURL: "http://127.0.0.1:9/mcp", Clock: runclock.FromUnixNano(1700000000000000000), StateDir: t.TempDir()}
	ops := Operations{Endpoint: env.MCPURL, Operations: []Operation{
		{Client: "c1", Call: "c1-1", Tool: "book", Arguments: json.RawMessage(`{"trip":"c1-1"}`)},
	}}
	var out bytes.Buffer
	exit, err := RunClient(ctx, append([]string{exe, "fake-client"}, args...), env, ops, &out)
	require.NoError(t, err)
	return exit, out.String(), env
}

func TestRunClientHandsTheClientItsContractAndKeepsItsExit(t *testing.T) {
	tests := []struct {
		arg  string
		code int
	}{{"0", 0}, {"5", 5}}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			exit, out, env := runFakeClient(t, context.Background(), tc.arg)
			assert.Equal(t, tc.code, exit.Code)
			assert.False(t, exit.Stopped)
			assert.Equal(t, fmt.Sprintf("url=http://127.0.0.1:9/mcp base=1700000000000000000 state=%s ops=1 first=c1-1\n", env.StateDir), out)
			require.NoError(t, SaveExit(env.StateDir, exit))
			back, err := LoadExit(env.StateDir)
			require.NoError(t, err)
			assert.Equal(t, exit, back)
		})
	}
}

func TestRunClientStopsAClientWhenTheRunEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	exit, _, _ := runFakeClient(t, ctx, "hang")
	assert.True(t, exit.Stopped)
	assert.Equal(t, 3, exit.Code, "SIGTERM first: the client ends its own way")
}

func TestRunClientWithoutACommand(t *testing.T) {
	_, err := RunClient(context.Background(), nil, ClientEnv{StateDir: t.TempDir()}, Operations{}, &bytes.Buffer{})
	require.ErrorIs(t, err, ErrNoCommand)
	_, err = RunClient(context.Background(), []string{"/no/such/client"}, ClientEnv{StateDir: t.TempDir()}, Operations{}, &bytes.Buffer{})
	require.ErrorContains(t, err, "start client command")
}

func TestClientExpandFillsTheEndpointPlaceholders(t *testing.T) {
	tests := []struct {
		name, url string
		args      []string
		want      []string
	}{
		{"the url", "http://127.0.0.1:41234/mcp", []string{"--http", "{url}"}, []string{"--http", "http://127.0.0.1:41234/mcp"}},
		{"its parts", "http://127.0.0.1:41234/mcp", []string{"-host", "{host}", "-port", "{port}", "client"},
			[]string{"-host", "127.0.0.1", "-port", "41234", "client"}},
		{"several in one, with text around", "http://proxy:8080/mcp", []string{"--server=http://{addr}/v1", "{host}:{port}"},
			[]string{"--server=http://proxy:8080/v1", "proxy:8080"}},
		{"JSON is not a placeholder", "http://127.0.0.1:9/mcp", []string{`-args={"city":"nyc"}`}, []string{`-args={"city":"nyc"}`}},
		{"no port in the url", "http://proxy/mcp", []string{"{host}", "[{port}]"}, []string{"proxy", "[]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string(nil), tc.args...)
			assert.Equal(t, tc.want, ClientEnv{MCPURL: tc.url}.Expand(args))
			assert.Equal(t, tc.args, args, "Expand leaves its argument alone")
		})
	}
}

func TestRunClientFillsThePlaceholdersOfItsArguments(t *testing.T) {
	exit, out, env := runFakeClient(t, context.Background(), "args", "--http", "{url}", "-port={port}")
	assert.Equal(t, 0, exit.Code)
	assert.Equal(t, fmt.Sprintf("url=http://127.0.0.1:9/mcp base=1700000000000000000 state=%s ops=1 first=c1-1\n"+
		"--http http://127.0.0.1:9/mcp -port=9\n", env.StateDir), out)
}

package byo

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// fakeClient is "fake-client CODE|hang": it prints its contract
// environment and the operations it read, then exits with CODE, or waits
// for SIGTERM and exits 3.
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
	if args[0] == "hang" {
		<-term
		return 3
	}
	code, _ := strconv.Atoi(args[0])
	return code
}

func runFakeClient(t *testing.T, ctx context.Context, arg string) (ClientExit, string, ClientEnv) {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	env := ClientEnv{MCPURL: "http://127.0.0.1:9/mcp", Clock: runclock.FromUnixNano(1700000000000000000), StateDir: t.TempDir()}
	ops := Operations{Endpoint: env.MCPURL, Operations: []Operation{
		{Client: "c1", Call: "c1-1", Tool: "book", Arguments: json.RawMessage(`{"trip":"c1-1"}`)},
	}}
	var out bytes.Buffer
	exit, err := RunClient(ctx, []string{exe, "fake-client", arg}, env, ops, &out)
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

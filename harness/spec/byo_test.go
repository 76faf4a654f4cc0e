package spec

import (
	"github.com/chaosrun/chaosrun/harness/agent"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBringYourOwnServersTakeNoKnobs(t *testing.T) {
	tests := []struct {
		name   string
		server string // replaces good's server block
		want   string // "" = valid
	}{
		{"command", "server:\n  target: command\n  command: [./srv, --flag]\n", ""},
		{"image", "server:\n  target: image\n  image: me/srv:1\n", ""},
		{"command without command", "server:\n  target: command\n", "server.command: is required when server.target is command"},
		{"image without image", "server:\n  target: image\n", "server.image: is required when server.target is image"},
		{"retention on a command", "server:\n  target: command\n  command: [./srv]\n  retention_events: 5\n",
			"x.yaml:8:21: server.retention_events: a bring-your-own server is given no knobs, only its environment (server.target is command)"},
		{"ttl on an image", "server:\n  target: image\n  image: me/srv:1\n  session_ttl: 1m\n",
			"server.session_ttl: a bring-your-own server is given no knobs"},
		{"a fixed address", "server:\n  target: command\n  command: [./srv]\n  listen: 127.0.0.1:9000\n", ""},
		{"a fixed address on localhost", "server:\n  target: command\n  command: [./srv]\n  listen: localhost:9000\n", ""},
		{"a fixed address off loopback", "server:\n  target: command\n  command: [./srv]\n  listen: 10.0.0.1:9000\n",
			"x.yaml:8:11: server.listen: must be on loopback (127.0.0.1, ::1 or localhost)"},
		{"a fixed address without a port", "server:\n  target: command\n  command: [./srv]\n  listen: 127.0.0.1:0\n",
			"server.listen: needs a port between 1 and 65535"},
		{"a fixed address that is none", "server:\n  target: command\n  command: [./srv]\n  listen: nine\n",
			`server.listen: must be host:port, got "nine"`},
		{"a fixed address for the reference server", "server:\n  listen: 127.0.0.1:9000\n",
			"server.listen: is only used when server.target is command"},
		{"reference knob on an image", "server:\n  target: image\n  image: me/srv:1\n  keepalive: 1s\n",
			"server.keepalive: only the reference server has this knob (server.target is image)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, "server:\n  retention_events: 100\n  keepalive: 0s\n", tc.server, 1)
			require.NotEqual(t, good, src)
			x, err := Parse("x.yaml", []byte(src))
			if tc.want == "" {
				require.NoError(t, err)
				if fixedAddress(x) == "" {
					assert.NoError(t, checkRuntime(x, "docker"))
				}
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestImageTargetNeedsTheDockerRuntime(t *testing.T) {
	src := strings.Replace(good, "server:\n  retention_events: 100\n  keepalive: 0s\n", "server:\n  target: image\n  image: me/srv:1\n", 1)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, checkRuntime(x, "docker"))
	err = checkRuntime(x, "local")
	require.ErrorIs(t, err, ErrInvalid)
	assert.EqualError(t, err, "x.yaml:6:11: server.target: image runs only on the docker runtime (--runtime docker), not on local")

	ref, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	assert.NoError(t, checkRuntime(ref, "local"), "every other target runs anywhere")
}

func TestAFixedListenAddressNeedsTheLocalRuntime(t *testing.T) {
	src := strings.Replace(good, "server:\n  retention_events: 100\n  keepalive: 0s\n",
		"server:\n  target: command\n  command: [./srv]\n  listen: 127.0.0.1:9000\n", 1)
	x, err := Parse("x.yaml", []byte(src))
	require.NoError(t, err)
	require.NoError(t, checkRuntime(x, "local"))
	err = checkRuntime(x, "docker")
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "x.yaml:8:11: server.listen: a fixed address runs only on the local runtime")
}

func TestCheckCommandsFindsProgramsThatCannotRun(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "srv")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755))
	plain := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(plain, []byte("x"), 0o644))
	tests := []struct {
		name    string
		program string
		want    string // "" = runnable
	}{
		{"an executable file", exe, ""},
		{"a name in PATH", "sh", ""},
		{"a name not in PATH", "no-such-server-anywhere", `x.yaml:7:13: server.command[0]: "no-such-server-anywhere" is not in PATH`},
		{"an absolute path to nothing", filepath.Join(dir, "gone"), `server.command[0]: "` + filepath.Join(dir, "gone") + `" does not exist`},
		{"a relative path to nothing", "./bin/gone", `"./bin/gone" does not exist (a relative path resolves against the working directory`},
		{"a folder", dir, "is a folder, not a program"},
		{"a file without an execute bit", plain, "is not executable (mode -rw-r--r--)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, "server:\n  retention_events: 100\n  keepalive: 0s\n",
				"server:\n  target: command\n  command: ["+tc.program+", --port, '{port}']\n", 1)
			x, err := Parse("x.yaml", []byte(src))
			require.NoError(t, err, "Parse does not look for the program: a saved run is judged where it may be absent")
			err = CheckCommands([]*Experiment{x})
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestWhatOneServerDoesIsRefusedWithReplicas(t *testing.T) {
	tests := []struct {
		name, server, fault, want string
	}{
		{"a fixed address for three replicas",
			"server:\n  target: command\n  command: [./srv]\n  listen: 127.0.0.1:9000\n  replicas: 3\n", "",
			"server.listen: a fixed address serves one replica, and server.replicas is 3"},
		{"a session fault on replicas", "server:\n  replicas: 2\n", "  - {kind: expire_session, at: 10s}\n",
			"faults[1].kind: expire_session reaches one server through its control endpoint, and server.replicas is 2"},
		{"a session fault on one server", "server:\n  replicas: 1\n", "  - {kind: expire_session, at: 10s}\n", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(good, "server:\n  retention_events: 100\n  keepalive: 0s\n", tc.server, 1)
			src = strings.Replace(src, "expect:", "balancer: {kind: nginx}\nexpect:", 1)
			src = strings.Replace(src, "close: reset}}\n", "close: reset}}\n"+tc.fault, 1)
			_, err := Parse("x.yaml", []byte(src))
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestAProgramOfYourOwnNeedsARuntimeThatRunsPrograms(t *testing.T) {
	noPrograms := agent.Capabilities{Runtime: "pods", Why: map[string]string{agent.CapPrograms: "its image holds only chaosrun"}}
	tests := []struct {
		name, server, client, want string
	}{
		{"a server command", "server:\n  target: command\n  command: [bin/srv, --addr, \"{addr}\"]\n", "",
			"x.yaml:7:13: server.command[0]: a program of your own (bin/srv) runs only on the local or docker runtime (--runtime local or docker), not on pods: its image holds only chaosrun"},
		{"a client command", "", "client:\n  target: command\n  command: [bin/cli]\n",
			"client.command[0]: a program of your own (bin/cli) runs only on the local or docker runtime"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := good
			if tc.server != "" {
				src = strings.Replace(src, "server:\n  retention_events: 100\n  keepalive: 0s\n", tc.server, 1)
			}
			if tc.client != "" {
				src = strings.Replace(src, "client:\n  target: naive\n  backoff: {initial: 1s, max: 30s, retries: 1}\n", tc.client, 1)
			}
			x, err := Parse("x.yaml", []byte(src))
			require.NoError(t, err)
			require.NoError(t, checkRuntime(x, "local"))
			err = x.CheckRuntime(noPrograms, runtimes)
			require.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	ref, err := Parse("x.yaml", []byte(good))
	require.NoError(t, err)
	assert.NoError(t, ref.CheckRuntime(noPrograms, runtimes), "chaosrun's own targets run without programs")
}

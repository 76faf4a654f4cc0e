package roles

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

func TestEveryTargetsConfigurationReadsBackInItsOwnType(t *testing.T) {
	for _, s := range catalog.Servers() {
		t.Run("server "+s.Name, func(t *testing.T) {
			in := ServerConfig{Target: s.Name, Tasks: "off", Protocol: "2025-11-25", Options: valid(s.Options()).Scaled(0.5), Redis: "127.0.0.1:1", Owner: "server-1"}
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var out ServerConfig
			require.NoError(t, json.Unmarshal(b, &out), "%s", b)
			assert.Equal(t, in, out)
		})
	}
	for _, c := range catalog.Clients() {
		t.Run("client "+c.Name, func(t *testing.T) {
			in := ClientConfig{Target: c.Name, Protocol: "2025-11-25", Options: valid(c.Options()).Scaled(0.5), Endpoints: []string{"http://p/mcp"}, Seed: 3,
				Workload: workload.Template{Clients: 2, Calls: []workload.Call{{Tool: "charge", Duration: time.Second}}}}
			b, err := json.Marshal(in)
			require.NoError(t, err)
			var out ClientConfig
			require.NoError(t, json.Unmarshal(b, &out), "%s", b)
			assert.Equal(t, in, out)
		})
	}
}

// valid fills in what a bring-your-own target's options require.
func valid(o targets.Options) targets.Options {
	switch o := o.(type) {
	case *catalog.CommandOptions:
		o.Command = []string{"./srv", "--port", "{port}"}
	case *catalog.ImageOptions:
		o.Image = "me/srv:1"
	case *catalog.ClientCommandOptions:
		o.Command = []string{"./client"}
	}
	return o
}

func TestAConfigurationIsReadStrictly(t *testing.T) {
	tests := []struct {
		name, config, want string
	}{
		{"an unknown target", `{"target": "nginx"}`, `unknown server target "nginx"`},
		{"a setting the target lacks", `{"target": "go-sdk", "options": {"on_unresumable": "gone"}}`, `unknown field "on_unresumable"`},
		{"a bad setting", `{"target": "reference", "options": {"retention_events": -1}}`, "retention_events: must be 0 (unbounded) or more"},
		{"an unknown key", `{"target": "reference", "replicas": 2}`, `unknown field "replicas"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cfg ServerConfig
			assert.ErrorContains(t, json.Unmarshal([]byte(tc.config), &cfg), tc.want)
		})
	}
	var cfg ServerConfig
	require.NoError(t, json.Unmarshal([]byte(`{"target": "reference"}`), &cfg))
	assert.Equal(t, server.DefaultOptions(), cfg.Options, "options left out are the target's defaults")
}

// startServerAgent runs the server agent in this process with the
// configuration config in its state folder, and returns its URL.
func startServerAgent(t *testing.T, config ServerConfig) string {
	t.Helper()
	state := t.TempDir()
	b, err := json.Marshal(config)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(state, agent.ConfigFile), b, 0o644))
	ctx, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- Run(ctx, []string{"server", "--state", state, "--addr", "127.0.0.1:0"}, w, io.Discard)
		w.Close()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err, "the agent announces its URL")
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return strings.TrimSpace(line)
}

// TestTheServerAgentServesWhatItsConfigurationSays: the go-sdk server is
// stateless (GET answers 405) exactly when the experiment's clients speak
// 2026-07-28, and the reference server takes its options.
func TestTheServerAgentServesWhatItsConfigurationSays(t *testing.T) {
	for _, tc := range []struct {
		protocol string
		get      int
	}{{"2026-07-28", http.StatusMethodNotAllowed}, {"2025-11-25", http.StatusBadRequest}} {
		t.Run("go-sdk at "+tc.protocol, func(t *testing.T) {
			url := startServerAgent(t, ServerConfig{Target: "go-sdk", Protocol: tc.protocol, Options: gosdk.ServerDescriptor.Options()})
			resp, err := http.Get(url + "/mcp")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tc.get, resp.StatusCode)
		})
	}
	for _, tasks := range []struct {
		mode string
		drop int
	}{{"extension", http.StatusOK}, {"off", http.StatusNotFound}} {
		t.Run("reference with tasks "+tasks.mode, func(t *testing.T) {
			opts := server.DefaultOptions()
			opts.SessionTTL = dur.Duration(time.Hour)
			url := startServerAgent(t, ServerConfig{Target: "reference", Tasks: tasks.mode, Options: opts})
			resp, err := http.Post(url+"/control/drop_tasks", "", nil)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, tasks.drop, resp.StatusCode, "a task store only when the configuration runs tasks")
		})
	}
}

// FuzzServerConfig: a configuration file is read without a panic, and one
// that reads reads back the same from what it writes.
func FuzzServerConfig(f *testing.F) {
	f.Add([]byte(`{"target": "reference", "tasks": "legacy", "options": {"retention_events": 5, "session_ttl": "1m"}}`))
	f.Add([]byte(`{"target": "command", "options": {"command": ["./srv", "{port}"], "listen": "127.0.0.1:9"}}`))
	f.Add([]byte(`{"target": "go-sdk", "protocol": "2026-07-28", "options": null}`))
	f.Add([]byte(`{"target": "mcp-go", "options": {"retention_events": -1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var cfg ServerConfig
		if json.Unmarshal(b, &cfg) != nil {
			return
		}
		require.NoError(t, cfg.Options.Validate(), "what reads is valid")
		again, err := json.Marshal(cfg)
		require.NoError(t, err)
		var back ServerConfig
		require.NoError(t, json.Unmarshal(again, &back), "%s", again)
		assert.Equal(t, cfg, back)
	})
}

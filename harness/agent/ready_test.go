package agent

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAwaitURL(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		line   string // sent when not ""
		exited bool
		log    string // the agent's log
		want   string // the error, or the line when ok ({log} is the log's path)
		ok     bool
	}{
		{"printed", context.Background(), "http://127.0.0.1:1", false, "", "http://127.0.0.1:1", true},
		{"exited first, saying nothing", context.Background(), "", true, "starting\n", "agent exited before it was ready (see {log})", false},
		{"exited first, saying why", context.Background(), "", true,
			"starting\nchaosrun: early\nconfig.toml: no such file\nchaosrun: server command srv exited before it listened: exit status 2\n",
			"agent exited before it was ready: server command srv exited before it listened: exit status 2 (see {log})", false},
		{"silent", context.Background(), "", false, "", "agent printed no URL within 20ms (see {log})", false},
		{"ctx ended", cancelled, "", false, "", context.Canceled.Error(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line, exited := make(chan string, 1), make(chan struct{})
			if tc.line != "" {
				line <- tc.line
			}
			if tc.exited {
				close(exited)
			}
			log := filepath.Join(t.TempDir(), "a.log")
			require.NoError(t, os.WriteFile(log, []byte(tc.log), 0o644))
			got, err := AwaitURL(tc.ctx, line, exited, 20*time.Millisecond, log)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.EqualError(t, err, strings.ReplaceAll(tc.want, "{log}", log))
		})
	}
}

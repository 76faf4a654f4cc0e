package agentside

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newKeeper(t *testing.T) (*Client, string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "ns")
	srv := httptest.NewServer((&Keeper{Root: root, UID: -1, GID: -1}).Handler())
	t.Cleanup(srv.Close)
	return NewClient(srv.URL), root
}

func TestKeeperPreparesServesAndRemovesAnExperimentsFolders(t *testing.T) {
	c, root := newKeeper(t)
	ctx := context.Background()
	require.NoError(t, c.MakeDir(ctx, "agents/server"))
	require.NoError(t, c.WriteFile(ctx, "agents/server/agent.json", []byte(`{"target":"reference"}`)))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "agents/server/store"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "agents/server/store/events"), []byte("e1\ne2\n"), 0o644))

	dst := filepath.Join(t.TempDir(), "copied.json")
	require.NoError(t, c.CopyFile(ctx, "agents/server/agent.json", dst))
	b, err := os.ReadFile(dst)
	require.NoError(t, err)
	assert.JSONEq(t, `{"target":"reference"}`, string(b))

	out := filepath.Join(t.TempDir(), "state")
	require.NoError(t, c.CopyDir(ctx, "agents/server", out))
	b, err = os.ReadFile(filepath.Join(out, "store", "events"))
	require.NoError(t, err)
	assert.Equal(t, "e1\ne2\n", string(b))
	assert.FileExists(t, filepath.Join(out, "agent.json"))

	empty := filepath.Join(t.TempDir(), "never")
	require.NoError(t, c.CopyDir(ctx, "agents/client", empty), "an agent that never started has an empty folder")
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries)

	require.NoError(t, c.Remove(ctx))
	assert.NoDirExists(t, root)
}

func TestKeeperRefusesPathsOutsideTheExperiment(t *testing.T) {
	c, root := newKeeper(t)
	ctx := context.Background()
	for _, rel := range []string{"../escape", "agents/../../escape", "/etc/passwd"} {
		err := c.WriteFile(ctx, rel, []byte("x"))
		require.Error(t, err, rel)
		assert.NoFileExists(t, filepath.Join(filepath.Dir(root), "escape"))
	}
	err := c.CopyFile(ctx, "agents/none/file", filepath.Join(t.TempDir(), "x"))
	require.ErrorContains(t, err, "404")
}

func TestKeeperOwnsWhatItMakesByTheAgentsUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("only root can give files away (the keeper runs as root in its pod)")
	}
	root := filepath.Join(t.TempDir(), "ns")
	srv := httptest.NewServer((&Keeper{Root: root, UID: 65532, GID: 65532}).Handler())
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL)
	require.NoError(t, c.WriteFile(context.Background(), "agents/proxy/agent.json", []byte("{}")))
	for _, p := range []string{"agents", "agents/proxy", "agents/proxy/agent.json"} {
		info, err := os.Stat(filepath.Join(root, p))
		require.NoError(t, err)
		assert.Equal(t, uint32(65532), uidOf(info), p)
	}
}

func TestKeeperAnswersBadRequestsWithAnError(t *testing.T) {
	root := t.TempDir()
	srv := httptest.NewServer((&Keeper{Root: filepath.Join(root, "ns"), UID: -1, GID: -1}).Handler())
	defer srv.Close()
	tests := []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/files/x", http.StatusMethodNotAllowed},
		{http.MethodPut, "/files/..%2fescape", http.StatusBadRequest},
		{http.MethodGet, "/tar/..%2f..%2f", http.StatusBadRequest},
	}
	for _, tt := range tests {
		req, err := http.NewRequest(tt.method, srv.URL+tt.path, nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tt.status, resp.StatusCode, tt.method+" "+tt.path)
	}
	assert.NoFileExists(t, filepath.Join(root, "escape"))
}

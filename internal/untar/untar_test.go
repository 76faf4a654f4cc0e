package untar

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// tarOf makes an archive of entries (a name ending in "/" is a folder).
func tarOf(t *testing.T, entries ...[2]string) *tar.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		name, body := e[0], e[1]
		h := &tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(name, "/") {
			h.Typeflag, h.Size = tar.TypeDir, 0
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err := tw.Write([]byte(body))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return tar.NewReader(&buf)
}

func TestExtractKeepsEntriesInsideTheFolder(t *testing.T) {
	for _, c := range []struct {
		name, top string
		entries   [][2]string
		bad       []string // entries each of which alone is refused
	}{
		{"under a top folder (a container's copy)", "state",
			[][2]string{{"state/", ""}, {"state/a/", ""}, {"state/a/b", "x"}, {"state/c", "y"}},
			[]string{"state/../../evil", "other/x", "statex/y", "/state/abs"}},
		{"relative to the folder (the keeper's archive)", "",
			[][2]string{{"a/", ""}, {"a/b", "x"}, {"c", "y"}},
			[]string{"../evil", "a/../../evil", "/abs"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, Extract(tarOf(t, c.entries...), c.top, dir))
			for rel, want := range map[string]string{"a/b": "x", "c": "y"} {
				got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
				require.NoError(t, err)
				assert.Equal(t, want, string(got))
			}
			for _, name := range c.bad {
				err := Extract(tarOf(t, [2]string{name, "x"}), c.top, t.TempDir())
				assert.ErrorContains(t, err, "outside the folder", name)
			}
		})
	}
}

func TestExtractSkipsWhatIsNeitherFolderNorFile(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "link", Linkname: "/etc/passwd", Typeflag: tar.TypeSymlink}))
	require.NoError(t, tw.Close())
	dir := t.TempDir()
	require.NoError(t, Extract(tar.NewReader(&buf), "", dir))
	_, err := os.Lstat(filepath.Join(dir, "link"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a symlink is not written")
}

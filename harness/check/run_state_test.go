package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoadRunReadsWhatAnInterruptedRunLeft: an interrupted run may leave the
// history and the ledger only in the agents' state folders; LoadRun reads
// them there, and the verdict is the one the exported files give.
func TestLoadRunReadsWhatAnInterruptedRunLeft(t *testing.T) {
	src := filepath.Join("..", "timeline", "testdata", "double-charge-lb-idle")
	whole, err := LoadRun(src)
	require.NoError(t, err)

	dir := t.TempDir()
	for from, to := range map[string]string{HistoryFile: StateHistoryFile, LedgerFile: StateLedgerFile, FaultsFile: FaultsFile, TimingsFile: TimingsFile} {
		b, err := os.ReadFile(filepath.Join(src, from))
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, to)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, to), b, 0o644))
	}
	left, err := LoadRun(dir)
	require.NoError(t, err)
	assert.Equal(t, Judge(whole), Judge(left))

	require.NoError(t, os.Remove(filepath.Join(dir, StateHistoryFile)))
	_, err = LoadRun(dir)
	assert.ErrorContains(t, err, HistoryFile, "with neither, the history is missing")
}

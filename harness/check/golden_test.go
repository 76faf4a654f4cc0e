package check

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden verdict files under testdata")

func verdictJSON(t *testing.T, v Verdict) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, v.WriteJSON(&buf))
	return buf.String()
}

func TestGoldenVerdicts(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			got := verdictJSON(t, Judge(sc.input()))
			path := filepath.Join("testdata", sc.name+".verdict.json")
			if *update {
				require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "go test ./harness/check -run TestGoldenVerdicts -update writes it")
			assert.Equal(t, string(want), got)
			assert.Equal(t, got, verdictJSON(t, Judge(sc.input())), "judging is deterministic")
		})
	}
}

func TestSaveLoadJudgeRoundTrip(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			dir := t.TempDir()
			in := sc.input()
			v := Judge(in)
			require.NoError(t, SaveRun(dir, in))
			require.NoError(t, SaveVerdict(filepath.Join(dir, VerdictFile), v))

			loaded, err := LoadRun(dir)
			require.NoError(t, err)
			assert.Equal(t, verdictJSON(t, v), verdictJSON(t, Judge(loaded)), "a saved run is judged the same offline")
			saved, err := LoadVerdict(filepath.Join(dir, VerdictFile))
			require.NoError(t, err)
			assert.Equal(t, v, saved)
		})
	}
}

func TestLoadRunTimings(t *testing.T) {
	write := func(t *testing.T, dir, name, content string) {
		t.Helper()
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	base := func(t *testing.T) string {
		dir := t.TempDir()
		require.NoError(t, SaveRun(dir, doubleChargeResumable()))
		require.NoError(t, os.Remove(filepath.Join(dir, TimingsFile)))
		return dir
	}
	tests := []struct {
		name       string
		prepare    func(t *testing.T, dir string)
		wall, plan time.Duration
		err        string
	}{
		{"timings.json", func(t *testing.T, dir string) {
			write(t, dir, TimingsFile, `{"wall_ms": 1200, "scheduled_ms": 1000}`)
		}, 1200 * time.Millisecond, time.Second, ""},
		{"from verdict.json", func(t *testing.T, dir string) {
			in := doubleChargeResumable()
			require.NoError(t, SaveVerdict(filepath.Join(dir, VerdictFile), Judge(in)))
		}, 5 * time.Second, 4600 * time.Millisecond, ""},
		{"neither", func(*testing.T, string) {}, 0, 0, ""},
		{"no fault log means no faults", func(t *testing.T, dir string) {
			require.NoError(t, os.Remove(filepath.Join(dir, FaultsFile)))
		}, 0, 0, ""},
		{"malformed timings", func(t *testing.T, dir string) { write(t, dir, TimingsFile, `{"wall_ms": "soon"}`) }, 0, 0, "timings.json"},
		{"unknown timing", func(t *testing.T, dir string) { write(t, dir, TimingsFile, `{"wall_s": 1}`) }, 0, 0, "unknown field"},
		{"malformed verdict", func(t *testing.T, dir string) { write(t, dir, VerdictFile, `{`) }, 0, 0, "verdict"},
		{"no history", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, HistoryFile))) }, 0, 0, "history"},
		{"no ledger", func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, LedgerFile))) }, 0, 0, "ledger"},
		{"corrupt ledger", func(t *testing.T, dir string) { write(t, dir, LedgerFile, "{oops\n{}\n") }, 0, 0, "ledger line 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := base(t)
			tc.prepare(t, dir)
			in, err := LoadRun(dir)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				assert.ErrorContains(t, err, "load run")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wall, in.Wall)
			assert.Equal(t, tc.plan, in.Scheduled)
		})
	}
}

package appendlog

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openCollect(t *testing.T, path string) (*Log, []string) {
	t.Helper()
	var got []string
	l, err := Open(path, Options{}, func(r []byte) error {
		got = append(got, string(r))
		return nil
	})
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l, got
}

func TestAppendSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, got := openCollect(t, path)
	require.Empty(t, got)
	for i := range 3 {
		require.NoError(t, l.Append(fmt.Appendf(nil, `{"n":%d}`, i)))
	}
	require.NoError(t, l.Close())
	_, got = openCollect(t, path)
	assert.Equal(t, []string{`{"n":0}`, `{"n":1}`, `{"n":2}`}, got)
}

func TestOpenTruncatesTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("a\nb\nhalf-writ"), 0o644))
	l, got := openCollect(t, path)
	assert.Equal(t, []string{"a", "b"}, got)
	require.NoError(t, l.Append([]byte("c")))
	require.NoError(t, l.Close())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "a\nb\nc\n", string(data))
}

func TestReplayErrorAbortsOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	require.NoError(t, os.WriteFile(path, []byte("ok\nbad\n"), 0o644))
	_, err := Open(path, Options{}, func(r []byte) error {
		if string(r) == "bad" {
			return fmt.Errorf("cannot decode")
		}
		return nil
	})
	require.ErrorContains(t, err, "cannot decode")
}

func TestConcurrentAppendsAllLand(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, _ := openCollect(t, path)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				assert.NoError(t, l.Append(fmt.Appendf(nil, "%d-%d", w, i)))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, l.Close())
	_, got := openCollect(t, path)
	assert.Len(t, got, 400)
}

func TestAppendRejectsNewlineAndClosed(t *testing.T) {
	l, _ := openCollect(t, filepath.Join(t.TempDir(), "log"))
	require.Error(t, l.Append([]byte("a\nb")))
	require.NoError(t, l.Close())
	require.NoError(t, l.Close())
	require.ErrorIs(t, l.Append([]byte("x")), ErrClosed)
}

func TestAppendBatch(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]string
		want    []string
		err     bool
	}{
		{"one batch in order", [][]string{{"a", "b", "c"}}, []string{"a", "b", "c"}, false},
		{"batches and singles", [][]string{{"a"}, {"b", "c"}, {"d"}}, []string{"a", "b", "c", "d"}, false},
		{"an empty batch writes nothing", [][]string{{}, {"a"}}, []string{"a"}, false},
		{"a newline anywhere refuses the whole batch", [][]string{{"a", "b\nc"}}, nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			l, _ := openCollect(t, path)
			for _, batch := range tc.batches {
				recs := make([][]byte, len(batch))
				for i, r := range batch {
					recs[i] = []byte(r)
				}
				if err := l.AppendBatch(recs); tc.err {
					require.Error(t, err)
				} else {
					require.NoError(t, err)
				}
			}
			require.NoError(t, l.Close())
			_, got := openCollect(t, path)
			assert.Equal(t, tc.want, got)
		})
	}
}

func BenchmarkAppendParallel(b *testing.B) {
	for _, sync := range []bool{true, false} {
		b.Run(fmt.Sprintf("fsync=%v", sync), func(b *testing.B) {
			l, err := Open(filepath.Join(b.TempDir(), "log"), Options{NoSync: !sync}, nil)
			require.NoError(b, err)
			defer l.Close()
			rec := []byte(`{"kind":"charge","order_id":"o-1","amount_cents":4999}`)
			b.SetParallelism(25) // 50 writers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := l.Append(rec); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// smallGrowth makes the log grow every few records for the test.
func smallGrowth(t *testing.T, by int64) {
	old := growBy
	growBy = by
	t.Cleanup(func() { growBy = old })
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}

func TestPreallocation(t *testing.T) {
	tests := []struct {
		name    string
		growBy  int64
		records int
	}{
		{"records within the first zeros", 1 << 20, 3},
		{"growing many times", 16, 200},
		{"a batch larger than the growth", 4, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			smallGrowth(t, tc.growBy)
			path := filepath.Join(t.TempDir(), "log")
			l, _ := openCollect(t, path)
			var want []string
			var batch [][]byte
			for i := range tc.records {
				r := fmt.Sprintf(`{"n":%d}`, i)
				want = append(want, r)
				batch = append(batch, []byte(r))
				if len(batch) == 5 || i == tc.records-1 {
					require.NoError(t, l.AppendBatch(batch))
					batch = nil
				}
			}
			records := int64(len(strings.Join(want, "\n")) + 1)
			assert.Greater(t, fileSize(t, path), records, "zeros are kept after the last record while the log is open")
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, strings.Join(want, "\n")+"\n", string(data[:records]))
			assert.Equal(t, make([]byte, len(data)-int(records)), data[records:], "past the records only zeros")
			require.NoError(t, l.Close())
			assert.Equal(t, records, fileSize(t, path), "Close trims the zeros")
			_, got := openCollect(t, path)
			assert.Equal(t, want, got)
		})
	}
}

// TestKilledLogReopens opens a copy of a log taken while it was open: what a
// killed process leaves, its records and then the preallocated zeros, or a
// torn write into them.
func TestKilledLogReopens(t *testing.T) {
	tests := []struct {
		name string
		tail string // written over the zeros after the records
		want []string
	}{
		{"zeros after the records", "", []string{"a", "b"}},
		{"a torn record in the zeros", "half-wr", []string{"a", "b"}},
		{"a record after a hole of zeros", "\x00\x00late\n", []string{"a", "b"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, _ := openCollect(t, filepath.Join(dir, "log"))
			require.NoError(t, l.AppendBatch([][]byte{[]byte("a"), []byte("b")}))
			data, err := os.ReadFile(filepath.Join(dir, "log"))
			require.NoError(t, err)
			require.Greater(t, len(data), len("a\nb\n")+len(tc.tail))
			copy(data[len("a\nb\n"):], tc.tail)
			killed := filepath.Join(dir, "killed")
			require.NoError(t, os.WriteFile(killed, data, 0o644))

			k, got := openCollect(t, killed)
			assert.Equal(t, tc.want, got)
			require.NoError(t, k.Append([]byte("c")))
			require.NoError(t, k.Close())
			after, err := os.ReadFile(killed)
			require.NoError(t, err)
			assert.Equal(t, "a\nb\nc\n", string(after))
		})
	}
}

func TestAppendRejectsZeroByte(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	l, _ := openCollect(t, path)
	require.ErrorContains(t, l.AppendBatch([][]byte{[]byte("a"), []byte("b\x00")}), "zero byte")
	require.NoError(t, l.Append([]byte("c")))
	require.NoError(t, l.Close())
	_, got := openCollect(t, path)
	assert.Equal(t, []string{"c"}, got)
}

func TestFailedFlushBreaksTheLog(t *testing.T) {
	l, err := Open(filepath.Join(t.TempDir(), "log"), Options{}, nil)
	require.NoError(t, err)
	require.NoError(t, l.Append([]byte("a")))
	require.NoError(t, l.f.Close()) // every write from now on fails
	first := l.Append([]byte("b"))
	require.ErrorContains(t, first, "appendlog: write")
	assert.Equal(t, first, l.Append([]byte("c")), "a later append fails with the first error")
	require.Error(t, l.Close())
}

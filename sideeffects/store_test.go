package sideeffects

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
)

func charge(id, order string) Record {
	return Record{ID: id, Kind: KindCharge, OrderID: order, AmountCents: 4999, TUS: 10}
}

func openTestStore(t testing.TB, path string) *Store {
	t.Helper()
	s, err := OpenStore(path, StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStoreNumbersDeduplicatesAndSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.log")
	s := openTestStore(t, path)

	a, dup, err := s.Append(ctx, charge("a", "o-1"))
	require.NoError(t, err)
	assert.False(t, dup)
	assert.Equal(t, int64(1), a.N)
	again, dup, err := s.Append(ctx, charge("a", "o-other"))
	require.NoError(t, err)
	assert.True(t, dup, "a retried id is a duplicate")
	assert.Equal(t, a, again, "the first stored content wins")
	b, _, err := s.Append(ctx, charge("b", "o-2"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), b.N)
	require.NoError(t, s.Close())

	s2 := openTestStore(t, path)
	assert.Equal(t, []Record{a, b}, s2.Records())
	c, _, err := s2.Append(ctx, charge("c", "o-3"))
	require.NoError(t, err)
	assert.Equal(t, int64(3), c.N, "numbering continues after a reopen")
	_, dup, err = s2.Append(ctx, charge("a", "o-1"))
	require.NoError(t, err)
	assert.True(t, dup, "ids stored before the reopen are still known")
}

func TestStoreConcurrentSameIDStoredOnce(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "ledger.log"))
	const writers = 50
	var wg sync.WaitGroup
	ns := make([]int64, writers)
	dups := make([]bool, writers)
	for w := range writers {
		wg.Go(func() {
			r, dup, err := s.Append(context.Background(), charge(fmt.Sprintf("id-%d", w%5), "o"))
			assert.NoError(t, err)
			ns[w], dups[w] = r.N, dup
		})
	}
	wg.Wait()
	assert.Equal(t, 5, s.Len())
	fresh := 0
	for w := range writers {
		assert.Equal(t, ns[w%5], ns[w], "every send of one id gets the same n")
		if !dups[w] {
			fresh++
		}
	}
	assert.Equal(t, 5, fresh, "exactly one send per id stores it")
}

func TestStoreAppendAllIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t, filepath.Join(t.TempDir(), "ledger.log"))
	_, err := s.AppendAll(ctx, []Record{charge("a", "o-1"), {ID: "b", Kind: KindCharge}})
	require.ErrorIs(t, err, ErrInvalid)
	assert.ErrorContains(t, err, "record 1")
	assert.Zero(t, s.Len())

	out, err := s.AppendAll(ctx, []Record{charge("a", "o-1"), charge("b", "o-2"), charge("a", "o-1")})
	require.NoError(t, err)
	require.Len(t, out, 3)
	assert.Equal(t, []int64{1, 2, 1}, []int64{out[0].Record.N, out[1].Record.N, out[2].Record.N})
	assert.Equal(t, []bool{false, false, true}, []bool{out[0].Duplicate, out[1].Duplicate, out[2].Duplicate})
	_, _, err = s.Append(ctx, Record{Kind: KindCharge, OrderID: "o", AmountCents: 1})
	require.ErrorIs(t, err, ErrInvalid, "the store never invents an id")
}

func TestStoreRecoversTornTailAndOutOfOrderLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.log")
	log := `{"id":"b","n":2,"t_us":5,"kind":"session_opened","session":"s"}` + "\n" +
		`{"id":"a","n":1,"t_us":4,"kind":"session_opened","session":"r"}` + "\n" +
		`{"id":"c","n":3,"t_us":6,"ki`
	require.NoError(t, os.WriteFile(path, []byte(log), 0o644))
	s := openTestStore(t, path)
	recs := s.Records()
	require.Len(t, recs, 2)
	assert.Equal(t, []string{"a", "b"}, []string{recs[0].ID, recs[1].ID}, "records come back in n order")
	c, dup, err := s.Append(context.Background(), charge("c", "o"))
	require.NoError(t, err)
	assert.False(t, dup, "a torn record was never acknowledged, so its id is new")
	assert.Equal(t, int64(3), c.N)
}

func TestStoreRejectsCorruptLog(t *testing.T) {
	tests := map[string]string{
		"not json":   "garbage\n",
		"without n":  `{"id":"a","t_us":1,"kind":"charge","order_id":"o","amount_cents":1}` + "\n",
		"wrong type": `{"id":"a","n":"one"}` + "\n",
	}
	for name, content := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.log")
			require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
			_, err := OpenStore(path, StoreOptions{})
			require.ErrorContains(t, err, "ledger store")
		})
	}
}

func TestStoreCloseIsIdempotentAndRefusesAppends(t *testing.T) {
	s := openTestStore(t, filepath.Join(t.TempDir(), "ledger.log"))
	_, _, err := s.Append(context.Background(), charge("a", "o"))
	require.NoError(t, err)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close())
	_, _, err = s.Append(context.Background(), charge("b", "o"))
	require.ErrorIs(t, err, ErrClosed)
	assert.Len(t, s.Records(), 1, "records stay readable after close")
}

func TestExportIsTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.log")
	s := openTestStore(t, path)
	for i := range 3 {
		_, _, err := s.Append(context.Background(), charge(fmt.Sprint(i), fmt.Sprint("o-", i)))
		require.NoError(t, err)
	}
	var buf bytes.Buffer
	require.NoError(t, s.Export(&buf))
	require.NoError(t, s.Close())
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(raw), buf.String(), "single-writer log lines are the export, byte for byte")
	recs, err := ReadLedger(&buf)
	require.NoError(t, err)
	assert.Equal(t, s.Records(), recs)
}

func TestReadLedger(t *testing.T) {
	good := `{"id":"a","n":1,"t_us":1,"kind":"session_opened","session":"s"}`
	tests := []struct {
		name  string
		input string
		ids   int
		err   string
	}{
		{"empty", "", 0, ""},
		{"one line", good + "\n", 1, ""},
		{"blank lines", "\n" + good + "\n\n", 1, ""},
		{"no final newline", good, 1, ""},
		{"torn tail dropped", good + "\n" + `{"id":"b","n":2,"t_`, 1, ""},
		{"malformed middle line", good + "\n{oops\n" + good + "\n", 0, "ledger line 2"},
		{"invalid record", `{"id":"a","n":1,"kind":"charge"}` + "\n", 0, "order_id is required"},
		{"unknown kind", `{"id":"a","n":1,"kind":"refund"}` + "\n", 0, "unknown kind"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := ReadLedger(bytes.NewBufferString(tc.input))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, recs, tc.ids)
		})
	}
}

// TestReadLedgerDamagedFiles reads the damaged files every reader of
// chaosrun's JSON-lines files reads alike (internal/jsonl/jsonltest).
func TestReadLedgerDamagedFiles(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		recs, err := ReadLedger(bytes.NewBufferString(tc.Input(okRecord)))
		assert.NoError(t, tc.Check(len(recs), err))
	}
}

func TestSaveAndLoadLedger(t *testing.T) {
	path := filepath.Join(t.TempDir(), LedgerFile)
	recs := []Record{{ID: "x", N: 2, Kind: KindSessionOpened, Session: "s", Client: "c"}, {ID: "y", N: 1, Kind: KindSessionClosed, Session: "s", Reason: "expired"}}
	require.NoError(t, SaveLedger(path, recs))
	got, err := LoadLedger(path)
	require.NoError(t, err)
	assert.Equal(t, []Record{recs[1], recs[0]}, got, "loaded in n order")
	_, err = LoadLedger(filepath.Join(t.TempDir(), "missing.jsonl"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

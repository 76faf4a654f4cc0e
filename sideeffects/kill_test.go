package sideeffects

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// childStoreEnv, when set, makes the test binary a ledger service on the
// store path it names instead of running tests.
const childStoreEnv = "CHAOSRUN_TEST_LEDGER_STORE"

func TestMain(m *testing.M) {
	if path := os.Getenv(childStoreEnv); path != "" {
		serveChild(path)
		return
	}
	os.Exit(m.Run())
}

// serveChild runs the ledger service until it is killed, printing its URL on
// the first line of stdout, as `chaosrun agent ledger` does.
func serveChild(path string) {
	s, err := OpenStore(path, StoreOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	if err := Serve(context.Background(), ln, s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// startChild starts the ledger service in a child process and returns its
// URL once it listens.
func startChild(t *testing.T, path string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childStoreEnv+"="+path)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "the child prints its URL first")
	return cmd, strings.TrimSpace(line)
}

// acks records what the ledger acknowledged, across writers.
type acks struct {
	mu     sync.Mutex
	n      map[string]int64 // id to the n it was acknowledged with
	want   int
	enough chan struct{} // closed once want records are acknowledged
}

func (a *acks) note(t *testing.T, batch []Record, ns []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for j, r := range batch {
		if prev, ok := a.n[r.ID]; ok {
			assert.Equal(t, prev, ns[j], "a resent id keeps its n")
		}
		a.n[r.ID] = ns[j]
	}
	if len(a.n) >= a.want {
		select {
		case <-a.enough:
		default:
			close(a.enough)
		}
	}
}

// freeze runs kill and returns what was acknowledged before it; no
// acknowledgement is counted once kill starts.
func (a *acks) freeze(kill func()) map[string]int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	kill()
	return maps.Clone(a.n)
}

// write sends records from writers goroutines until ctx ends or the ledger
// fails, each writer one call at a time, so that the client's group commit
// joins the calls of different writers into shared requests. With resend,
// every third call also resends the writer's previous record.
func (a *acks) write(ctx context.Context, t *testing.T, c *Client, writers int, resend bool) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				batch := []Record{charge(fmt.Sprintf("w%d-%d", w, i), "o")}
				if resend && i%3 == 2 {
					batch = append(batch, charge(fmt.Sprintf("w%d-%d", w, i-1), "o"))
				}
				ns, err := c.RecordAll(ctx, batch)
				if err != nil {
					return // the ledger was killed
				}
				a.note(t, batch, ns)
			}
		})
	}
	return &wg
}

func TestAcknowledgedRecordsSurviveSIGKILL(t *testing.T) {
	tests := []struct {
		name    string
		writers int
		resend  bool
		want    int
	}{
		{"ten writers, resending records", 10, true, 300},
		{"fifty writers, one record a call", 50, false, 3000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.log")
			cmd, url := startChild(t, path)
			a := &acks{n: map[string]int64{}, want: tc.want, enough: make(chan struct{})}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			writers := a.write(ctx, t, NewClient(url, WithRetry(1, time.Millisecond, time.Millisecond)), tc.writers, tc.resend)
			<-a.enough
			acked := a.freeze(func() {
				require.NoError(t, cmd.Process.Kill())
				_ = cmd.Wait()
			})
			stop()
			writers.Wait()
			checkSurvivors(t, path, acked)
		})
	}
}

// checkSurvivors reads the killed ledger at path as the offline checker does
// (its preallocated zeros still after the records), then reopens it: each
// way, every acknowledged record is there under the n it was acknowledged
// with, and no id or n is stored twice.
func checkSurvivors(t *testing.T, path string, acked map[string]int64) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	read, err := ReadLedger(f)
	f.Close()
	require.NoError(t, err)
	checkAcked(t, "read", read, acked)
	s, err := OpenStore(path, StoreOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	recs := s.Records()
	checkAcked(t, "reopened", recs, acked)
	t.Logf("%d acknowledged before SIGKILL, %d on disk after", len(acked), len(recs))
}

func checkAcked(t *testing.T, how string, recs []Record, acked map[string]int64) {
	t.Helper()
	stored, ns := map[string]int64{}, map[int64]bool{}
	for _, r := range recs {
		_, twice := stored[r.ID]
		assert.False(t, twice, "%s: id %s stored twice", how, r.ID)
		assert.False(t, ns[r.N], "%s: n %d used twice", how, r.N)
		stored[r.ID], ns[r.N] = r.N, true
	}
	for id, n := range acked {
		require.Equal(t, n, stored[id], "%s: acknowledged record %s lost or renumbered after SIGKILL", how, id)
	}
}

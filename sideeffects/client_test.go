package sideeffects

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var _ Recorder = (*Client)(nil)

// fastRetry keeps backoff in milliseconds.
var fastRetry = WithRetry(5, time.Millisecond, 4*time.Millisecond)

// lossyFront stores each of the first `lose` requests in the ledger and then
// drops the connection without an answer, as a network fault after the
// commit would; later requests pass through.
func lossyFront(t *testing.T, lose int32) (*Store, string, *atomic.Int32) {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "ledger.log"), StoreOptions{NoSync: true})
	require.NoError(t, err)
	svc := NewService(s)
	var seen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if seen.Add(1) > lose {
			svc.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		svc.ServeHTTP(rec, r)
		assert.Equal(t, 200, rec.Code)
		conn, _, err := http.NewResponseController(w).Hijack()
		if assert.NoError(t, err) {
			conn.Close()
		}
	}))
	t.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return s, srv.URL, &seen
}

func TestClientRetryAfterLostAnswerStoresOnce(t *testing.T) {
	s, url, seen := lossyFront(t, 2)
	c := NewClient(url, fastRetry)
	require.NoError(t, c.Record(context.Background(), Record{Kind: KindCharge, OrderID: "o-1", AmountCents: 10}))
	assert.Equal(t, int32(3), seen.Load(), "two lost answers, then success")
	recs := s.Records()
	require.Len(t, recs, 1, "the retries carried the same id")
	assert.NotEmpty(t, recs[0].ID)
}

func TestClientAppendReturnsNumbers(t *testing.T) {
	_, srv := newTestService(t, StoreOptions{NoSync: true})
	c := NewClient(srv.URL+"/", fastRetry)
	ns, err := c.RecordAll(context.Background(), []Record{charge("a", "o-1"), charge("b", "o-2"), charge("a", "o-1")})
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 2, 1}, ns)
	recs, err := c.Records(context.Background())
	require.NoError(t, err)
	assert.Len(t, recs, 2)
}

func TestClientErrors(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		attempts int32
		rejected bool
	}{
		{"4xx is not retried", http.StatusBadRequest, 1, true},
		{"5xx is retried until attempts run out", http.StatusServiceUnavailable, 5, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				n.Add(1)
				writeJSON(w, tc.status, errorResponse{Error: "no thanks"})
			}))
			t.Cleanup(srv.Close)
			err := NewClient(srv.URL, fastRetry).Record(context.Background(), charge("a", "o"))
			require.ErrorContains(t, err, "no thanks")
			if tc.rejected {
				require.ErrorIs(t, err, ErrRejected)
			} else {
				require.NotErrorIs(t, err, ErrRejected)
			}
			assert.Equal(t, tc.attempts, n.Load())
		})
	}
}

func TestClientStopsRetryingOnCancel(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := NewClient(srv.URL, WithRetry(100, time.Hour, time.Hour))
	err := c.Record(ctx, charge("a", "o"))
	require.ErrorIs(t, err, context.Canceled)
}

func TestClientFillsIDAndValidatesBeforeSending(t *testing.T) {
	_, srv := newTestService(t, StoreOptions{NoSync: true})
	c := NewClient(srv.URL, fastRetry)
	err := c.Record(context.Background(), Record{Kind: KindCharge, OrderID: "o"})
	require.ErrorIs(t, err, ErrRejected)
	assert.ErrorContains(t, err, "amount_cents must be positive")
}

// countingFront serves the ledger behind a handler that counts POSTs and
// the records each carried, and refuses (400) any POST carrying more than
// refuseOver records when refuseOver is positive, as a ledger with a smaller
// batch limit would.
func countingFront(t *testing.T, refuseOver int) (*Store, string, *atomic.Int32) {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "ledger.log"), StoreOptions{NoSync: true})
	require.NoError(t, err)
	svc := NewService(s)
	var posts atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			svc.ServeHTTP(w, r)
			return
		}
		posts.Add(1)
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		if refuseOver > 0 && bytes.Count(body, []byte(`"id"`)) > refuseOver {
			writeJSON(w, http.StatusBadRequest, errorResponse{Error: "too many records"})
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		svc.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return s, srv.URL, &posts
}

func TestClientGroupCommit(t *testing.T) {
	tests := []struct {
		name       string
		writers    int
		each       int
		refuseOver int
		shared     bool // fewer requests than records
	}{
		{"concurrent records share requests", 50, 40, 0, true},
		{"a refused shared batch is sent again caller by caller", 20, 10, 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, url, posts := countingFront(t, tc.refuseOver)
			c := NewClient(url, fastRetry)
			ns := make([][]int64, tc.writers)
			var wg sync.WaitGroup
			for w := range tc.writers {
				wg.Go(func() {
					for i := range tc.each {
						got, err := c.RecordAll(context.Background(), []Record{charge(fmt.Sprintf("w%d-%d", w, i), "o")})
						if !assert.NoError(t, err) {
							return
						}
						ns[w] = append(ns[w], got...)
					}
				})
			}
			wg.Wait()
			total := tc.writers * tc.each
			require.Equal(t, total, s.Len(), "every record stored once")
			byID := map[string]int64{}
			for _, r := range s.Records() {
				byID[r.ID] = r.N
			}
			for w := range ns {
				require.Len(t, ns[w], tc.each)
				for i, n := range ns[w] {
					assert.Equal(t, byID[fmt.Sprintf("w%d-%d", w, i)], n, "each caller is answered with its own record's n")
				}
			}
			if tc.shared {
				assert.Less(t, int(posts.Load()), total/2, "records share requests")
			}
		})
	}
}

func TestClientLoneWriterDoesNotLinger(t *testing.T) {
	_, url, posts := countingFront(t, 0)
	c := NewClient(url, fastRetry, WithBatch(100, time.Hour))
	start := time.Now()
	for i := range 20 {
		require.NoError(t, c.Record(context.Background(), charge(fmt.Sprint("r", i), "o")))
	}
	assert.Less(t, time.Since(start), 10*time.Second, "a writer alone never waits for others")
	assert.Equal(t, int32(20), posts.Load())
}

func TestClientRefusesInvalidRecordAloneAndSharesTheRest(t *testing.T) {
	_, url, posts := countingFront(t, 0)
	c := NewClient(url, fastRetry)
	_, err := c.RecordAll(context.Background(), []Record{charge("a", "o"), {ID: "b", Kind: KindCharge}})
	require.ErrorIs(t, err, ErrRejected)
	assert.ErrorContains(t, err, "record 1: charge: order_id is required")
	assert.Zero(t, posts.Load(), "an invalid record is refused before it can spoil a shared request")
}

func TestClientCancelledCallersStopTheirSend(t *testing.T) {
	arrived, gone := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body) // the server notices a closed connection once the body is read
		close(arrived)
		<-r.Context().Done()
		close(gone)
	}))
	t.Cleanup(srv.Close)
	c := NewClient(srv.URL, WithRetry(100, time.Hour, time.Hour))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Record(ctx, charge("a", "o")) }()
	<-arrived
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	select {
	case <-gone:
	case <-time.After(10 * time.Second):
		t.Fatal("the request went on after its only caller gave up")
	}
}

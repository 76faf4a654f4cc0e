package sideeffects

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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

func TestClientFillsIDAndValidatesOnServer(t *testing.T) {
	_, srv := newTestService(t, StoreOptions{NoSync: true})
	c := NewClient(srv.URL, fastRetry)
	err := c.Record(context.Background(), Record{Kind: KindCharge, OrderID: "o"})
	require.ErrorIs(t, err, ErrRejected)
	assert.ErrorContains(t, err, "amount_cents must be positive")
}

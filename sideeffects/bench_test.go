package sideeffects

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkLedgerWriters measures acknowledged, fsync'd records per second
// from concurrent writers: over HTTP with the client's group commit
// (via=http), over HTTP with one request per record as clients sent before
// it (via=http-single), and into the store directly (via=store), to show
// what the HTTP hop costs and what group commit buys.
//
//	go test -run '^$' -bench LedgerWriters -benchtime 3s -count 3 ./sideeffects/
func BenchmarkLedgerWriters(b *testing.B) {
	for _, via := range []string{"http", "http-single", "store"} {
		for _, writers := range []int{1, 50} {
			b.Run(fmt.Sprintf("via=%s/writers=%d", via, writers), func(b *testing.B) {
				benchWriters(b, via, writers)
			})
		}
	}
}

func benchWriters(b *testing.B, via string, writers int) {
	ctx := context.Background()
	var record func(Record) error
	var requests atomic.Int64
	switch via {
	case "http", "http-single":
		srv := countingService(b, &requests)
		c := NewClient(srv.URL)
		if via == "http-single" {
			// One request per record, as many in flight as writers: the
			// client before group commit.
			c = NewClient(srv.URL, WithBatch(1, 0))
			c.batch.senders = writers
		}
		record = func(r Record) error { return c.Record(ctx, r) }
	default:
		s, err := OpenStore(filepath.Join(b.TempDir(), "ledger.log"), StoreOptions{})
		require.NoError(b, err)
		b.Cleanup(func() { s.Close() })
		record = func(r Record) error { _, _, err := s.Append(ctx, r); return err }
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range writers {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				r := Record{ID: fmt.Sprint("bench-", i), Kind: KindCharge, OrderID: fmt.Sprint("o-", i), AmountCents: 4999, Session: "0123456789abcdef0123456789abcdef", RequestID: "7"}
				if err := record(r); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	if n := requests.Load(); n > 0 {
		b.ReportMetric(float64(b.N)/float64(n), "records/request")
	}
}

// countingService starts a durable ledger service that counts its POSTs.
func countingService(b *testing.B, posts *atomic.Int64) *httptest.Server {
	s, err := OpenStore(filepath.Join(b.TempDir(), "ledger.log"), StoreOptions{})
	require.NoError(b, err)
	svc := NewService(s)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		svc.ServeHTTP(w, r)
	}))
	b.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return srv
}

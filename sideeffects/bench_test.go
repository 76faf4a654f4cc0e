package sideeffects

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkLedgerWriters measures acknowledged, fsync'd records per second
// from concurrent writers, over HTTP (client, loopback, service, store) and
// into the store directly, to show what the HTTP hop costs and what group
// commit buys over a single writer.
func BenchmarkLedgerWriters(b *testing.B) {
	for _, via := range []string{"http", "store"} {
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
	if via == "http" {
		_, srv := newTestService(b, StoreOptions{})
		c := NewClient(srv.URL)
		record = func(r Record) error { return c.Record(ctx, r) }
	} else {
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
}

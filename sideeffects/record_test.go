package sideeffects

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		rec  Record
		err  string
	}{
		{"charge ok", Record{ID: "a", Kind: KindCharge, OrderID: "o", AmountCents: 1}, ""},
		{"no id", Record{Kind: KindCharge, OrderID: "o", AmountCents: 1}, "id is required"},
		{"id of 129 bytes", Record{ID: strings.Repeat("a", 129), Kind: KindCharge, OrderID: "o", AmountCents: 1}, "longer than 128"},
		{"id not UTF-8", Record{ID: "a\xff", Kind: KindCharge, OrderID: "o", AmountCents: 1}, "not valid UTF-8"},
		{"id of 128 bytes in UTF-8", Record{ID: strings.Repeat("é", 64), Kind: KindCharge, OrderID: "o", AmountCents: 1}, ""},
		{"unknown kind", Record{ID: "a", Kind: "refund"}, "unknown kind"},
		{"charge without order", Record{ID: "a", Kind: KindCharge, AmountCents: 1}, "order_id"},
		{"charge of zero", Record{ID: "a", Kind: KindCharge, OrderID: "o"}, "amount_cents"},
		{"event without id or seq", Record{ID: "a", Kind: KindEventEmitted, Session: "s"}, "event_id or seq"},
		{"event with seq only", Record{ID: "a", Kind: KindEventEmitted, Session: "s", Seq: 3}, ""},
		{"session without id", Record{ID: "a", Kind: KindSessionOpened}, "session is required"},
		{"negative time", Record{ID: "a", Kind: KindCallStarted, TUS: -1}, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.rec.Validate()
			if tc.err == "" {
				require.NoError(t, err)
			} else {
				require.ErrorContains(t, err, tc.err)
			}
		})
	}
}

func TestMemoryStoresEachIDOnce(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	rec := Record{ID: "r1", Kind: KindCharge, OrderID: "o", AmountCents: 5}
	require.NoError(t, m.Record(ctx, rec))
	require.NoError(t, m.Record(ctx, rec), "a retried write is accepted")
	require.NoError(t, m.Record(ctx, Record{Kind: KindCharge, OrderID: "o", AmountCents: 5}))
	assert.Equal(t, 2, m.Count(KindCharge))
	recs := m.Records()
	assert.Equal(t, int64(2), recs[1].N)
	assert.NotEmpty(t, recs[1].ID)
	require.Error(t, m.Record(ctx, Record{ID: "bad", Kind: "nope"}))
}

func TestMemoryNextSignalsALaterMatchingRecord(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	require.NoError(t, m.Record(ctx, Record{Kind: KindCharge, OrderID: "o", AmountCents: 1}))
	charged := m.Next(func(r Record) bool { return r.Kind == KindCharge })
	select {
	case <-charged:
		t.Fatal("a record stored before the call does not count")
	default:
	}
	require.NoError(t, m.Record(ctx, Record{Kind: KindCallStarted}))
	require.NoError(t, m.Record(ctx, Record{Kind: KindCharge, OrderID: "o", AmountCents: 1}))
	<-charged
	assert.Len(t, m.Of(KindCharge), 2)
	assert.Equal(t, 1, m.Count(KindCallStarted))
}

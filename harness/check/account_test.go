package check

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

// numbered gives records ids and numbers in order, as the store would.
func numbered(recs ...sideeffects.Record) []sideeffects.Record {
	for i := range recs {
		recs[i].N = int64(i + 1)
		recs[i].ID = fmt.Sprint("rec-", i+1)
	}
	return recs
}

// emits returns event_emitted records for seqs first..last of a stream,
// with event id base+seq.
func emits(session, req string, first, last, base int64) []sideeffects.Record {
	var out []sideeffects.Record
	for seq := first; seq <= last; seq++ {
		out = append(out, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: session, RequestID: req, EventID: base + seq, Seq: seq})
	}
	return out
}

// sdkEmits returns event_emitted records of an SDK server, which knows the
// sequence numbers of its events but not their ids.
func sdkEmits(session, req string, last int64) []sideeffects.Record {
	var out []sideeffects.Record
	for seq := int64(1); seq <= last; seq++ {
		out = append(out, sideeffects.Record{Kind: sideeffects.KindEventEmitted, Session: session, RequestID: req, Seq: seq})
	}
	return out
}

// got returns history event records for the given seqs of a stream.
func got(session, req string, base int64, seqs ...int64) []history.Record {
	var out []history.Record
	for _, seq := range seqs {
		out = append(out, history.Record{Kind: history.KindEvent, Client: "c", Session: session, RequestID: req, EventID: base + seq, Seq: seq})
	}
	return out
}

func TestAccountDuplicates(t *testing.T) {
	ledger := numbered(
		sideeffects.Record{Kind: sideeffects.KindCharge, OrderID: "o-1", AmountCents: 1},
		sideeffects.Record{Kind: sideeffects.KindCharge, OrderID: "o-2", AmountCents: 1},
		sideeffects.Record{Kind: sideeffects.KindChargeDeduplicated, OrderID: "o-2", IdempotencyKey: "k"},
		sideeffects.Record{Kind: sideeffects.KindCharge, OrderID: "o-1", AmountCents: 1},
		sideeffects.Record{Kind: sideeffects.KindCharge, OrderID: "o-1", AmountCents: 1},
	)
	a := Account(ledger, nil, nil)
	assert.Equal(t, 4, a.Charges)
	assert.Equal(t, []OrderCharges{{OrderID: "o-1", Charges: []int64{1, 4, 5}}}, a.Duplicates)
	assert.Equal(t, 2, a.DuplicateCharges())
	assert.Empty(t, Account(ledger[:3], nil, nil).Duplicates)
}

func TestAccountEvents(t *testing.T) {
	cat := func(lists ...[]sideeffects.Record) []sideeffects.Record {
		var out []sideeffects.Record
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	hcat := func(lists ...[]history.Record) []history.Record {
		var out []history.Record
		for _, l := range lists {
			out = append(out, l...)
		}
		return out
	}
	ok := func(req string, eventID int64) []history.Record {
		return []history.Record{{Kind: history.KindOK, Client: "c", Session: "s", RequestID: req, EventID: eventID}}
	}
	gap := func(req string, from, to int64) []history.Record {
		return []history.Record{{Kind: history.KindGap, Client: "c", Session: "s", RequestID: req, FromEventID: from, ToEventID: to}}
	}
	tests := []struct {
		name   string
		ledger []sideeffects.Record
		hist   []history.Record
		want   EventCounts
		silent []int64 // seqs lost silently
	}{
		{"all received, replays counted once", emits("s", "1", 1, 3, 10),
			hcat(got("s", "1", 10, 1, 2, 2, 3), ok("1", 14)), EventCounts{Emitted: 3, Received: 3}, nil},
		{"missing before a later event", emits("s", "1", 1, 5, 10),
			got("s", "1", 10, 1, 2, 5), EventCounts{Emitted: 5, Received: 3, LostSilent: 2}, []int64{3, 4}},
		{"missing tail before the result read", emits("s", "1", 1, 5, 10),
			hcat(got("s", "1", 10, 1, 2), ok("1", 0)), EventCounts{Emitted: 5, Received: 2, LostSilent: 3}, []int64{3, 4, 5}},
		{"missing inside a surfaced gap", emits("s", "1", 1, 5, 10),
			hcat(got("s", "1", 10, 1, 2), gap("1", 12, 14), got("s", "1", 10, 5), ok("1", 16)),
			EventCounts{Emitted: 5, Received: 3, LostSurfaced: 2}, nil},
		{"gap surfaced for the whole session", emits("s", "1", 1, 4, 10),
			hcat(got("s", "1", 10, 1), gap("", 11, 13), got("s", "1", 10, 4)),
			EventCounts{Emitted: 4, Received: 2, LostSurfaced: 2}, nil},
		{"gap of another stream does not cover", emits("s", "1", 1, 3, 10),
			hcat(got("s", "1", 10, 1), gap("2", 10, 20), got("s", "1", 10, 3)),
			EventCounts{Emitted: 3, Received: 2, LostSilent: 1}, []int64{2}},
		{"abandoned stream: the rest is unread", emits("s", "1", 1, 5, 10),
			got("s", "1", 10, 1, 2), EventCounts{Emitted: 5, Received: 2, Unread: 3}, nil},
		{"a fail without a result does not read the stream", emits("s", "1", 1, 3, 10),
			hcat(got("s", "1", 10, 1), []history.Record{{Kind: history.KindFail, Session: "s", RequestID: "1", Reason: "gave up"}}),
			EventCounts{Emitted: 3, Received: 1, Unread: 2}, nil},
		{"a fail with a result does", emits("s", "1", 1, 3, 10),
			hcat(got("s", "1", 10, 1), []history.Record{{Kind: history.KindFail, Session: "s", RequestID: "1", EventID: 14}}),
			EventCounts{Emitted: 3, Received: 1, LostSilent: 2}, []int64{2, 3}},
		{"events the server could not number are placed by seq", sdkEmits("s", "1", 5),
			got("s", "1", 10, 1, 2), EventCounts{Emitted: 5, Received: 2, Unread: 3}, nil},
		{"events the server could not number, lost before a later one", sdkEmits("s", "1", 5),
			got("s", "1", 10, 1, 4), EventCounts{Emitted: 5, Received: 2, LostSilent: 2, Unread: 1}, []int64{2, 3}},
		{"events the server could not number, inside a surfaced gap", sdkEmits("s", "1", 6),
			hcat(got("s", "1", 10, 1, 2), gap("1", 12, 40), got("s", "1", 40, 5, 6)),
			EventCounts{Emitted: 6, Received: 4, LostSurfaced: 2}, nil},
		{"unnumbered events are not counted", cat(emits("s", "1", 0, 2, 10)),
			got("s", "1", 10, 0, 1, 2), EventCounts{Emitted: 2, Received: 2}, nil},
		{"events received on another session do not match", emits("s", "1", 1, 2, 10),
			hcat(got("t", "1", 10, 1, 2), ok("1", 0)), EventCounts{Emitted: 2, LostSilent: 2}, []int64{1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Account(numbered(tc.ledger...), tc.hist, nil)
			assert.Equal(t, tc.want, a.Events)
			require.Len(t, a.Streams, 1)
			var seqs []int64
			for _, e := range a.Streams[0].Silent {
				seqs = append(seqs, e.Seq)
			}
			assert.Equal(t, tc.silent, seqs)
		})
	}
}

func TestAccountStreamEvidence(t *testing.T) {
	hist := append(got("s", "1", 10, 1), history.Record{Kind: history.KindGap, Session: "s", RequestID: "1", FromEventID: 11, ToEventID: 12})
	hist = append(hist, got("s", "1", 10, 4)...)
	a := Account(numbered(emits("s", "1", 1, 4, 10)...), hist, nil)
	require.Len(t, a.Streams, 1)
	s := a.Streams[0]
	assert.Equal(t, StreamKey{Session: "s", RequestID: "1"}, s.StreamKey)
	assert.Equal(t, []int{2}, s.Gaps, "the gap's history line")
	assert.Equal(t, 3, s.Later, "the line of the furthest event received")
	assert.Equal(t, []EmittedEvent{{N: 3, EventID: 13, Seq: 3}}, s.Silent)
}

func TestAccountForks(t *testing.T) {
	open := func(session, client string, t int64) sideeffects.Record {
		return sideeffects.Record{Kind: sideeffects.KindSessionOpened, Session: session, Client: client, TUS: t}
	}
	closed := func(session string, t int64) sideeffects.Record {
		return sideeffects.Record{Kind: sideeffects.KindSessionClosed, Session: session, Reason: "expired", TUS: t}
	}
	tests := []struct {
		name      string
		ledger    []sideeffects.Record
		unclaimed []string    // sessions no history record names
		forks     [][2]string // live, new
	}{
		{"one session", []sideeffects.Record{open("a", "c1", 0)}, nil, nil},
		{"second session while the first is live", []sideeffects.Record{open("a", "c1", 0), open("b", "c1", 10)}, nil, [][2]string{{"a", "b"}}},
		{"second session after the first closed", []sideeffects.Record{open("a", "c1", 0), closed("a", 10), open("b", "c1", 10)}, nil, nil},
		{"closed after the second opened", []sideeffects.Record{open("a", "c1", 0), open("b", "c1", 10), closed("a", 11)}, nil, [][2]string{{"a", "b"}}},
		{"different clients", []sideeffects.Record{open("a", "c1", 0), open("b", "c2", 10)}, nil, nil},
		{"sessions without a client", []sideeffects.Record{open("a", "", 0), open("b", "", 10)}, nil, nil},
		{"a lost initialize answer opens a session never held", []sideeffects.Record{open("a", "c1", 0), open("b", "c1", 5)}, []string{"a"}, nil},
		{"three at once", []sideeffects.Record{open("a", "c1", 0), open("b", "c1", 5), open("c", "c1", 9)}, nil, [][2]string{{"a", "b"}, {"a", "c"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hist []history.Record
			for _, r := range tc.ledger {
				if r.Kind == sideeffects.KindSessionOpened && !slices.Contains(tc.unclaimed, r.Session) {
					hist = append(hist, history.Record{Kind: history.KindSessionNew, Client: r.Client, Session: r.Session})
				}
			}
			a := Account(numbered(tc.ledger...), hist, nil)
			var forks [][2]string
			for _, f := range a.Forks {
				forks = append(forks, [2]string{f.Live.ID, f.New.ID})
			}
			assert.Equal(t, tc.forks, forks)
		})
	}
	// A server that crashed on a memory store writes no session_closed: its
	// session ends when a client is told it is gone, not when it abandons it.
	for _, tc := range []struct {
		reason string
		fork   bool
	}{{"status_404", false}, {"close_event", false}, {"abandoned", true}} {
		hist := []history.Record{
			{Kind: history.KindSessionNew, Client: "c1", Session: "a"},
			{TUS: 9, Kind: history.KindSessionLost, Client: "c1", Session: "a", Reason: tc.reason},
			{Kind: history.KindSessionNew, Client: "c1", Session: "b"},
		}
		a := Account(numbered(open("a", "c1", 0), open("b", "c1", 10)), hist, nil)
		assert.Equal(t, tc.fork, len(a.Forks) == 1, "session lost by %s", tc.reason)
	}

	a := Account(numbered(open("a", "c1", 3), closed("a", 8)), []history.Record{{Kind: history.KindInvoke, Session: "a"}}, nil)
	assert.Equal(t, []SessionSpan{{ID: "a", Client: "c1", Opened: 1, OpenedUS: 3, Closed: 2, ClosedUS: 8, Claimed: true}}, a.Sessions)
}

func TestAccountOrphans(t *testing.T) {
	written := func(session, req string, eventID int64) sideeffects.Record {
		return sideeffects.Record{Kind: sideeffects.KindResultWritten, Session: session, RequestID: req, EventID: eventID}
	}
	ledger := numbered(
		written("s", "1", 5),
		written("s", "2", 9),
		written("t", "3", 0),
		sideeffects.Record{Kind: sideeffects.KindResultDropped, Session: "u", RequestID: "4", Reason: "session gone"},
		written("s", "2", 9), // written again: one stream, one orphan
	)
	hist := []history.Record{
		{Kind: history.KindOK, Session: "s", RequestID: "1", EventID: 5},
		{Kind: history.KindFail, Session: "t", RequestID: "3", Result: history.ResultRead}, // a JSON error answer
		{Kind: history.KindOK, Session: "x", RequestID: "2"},
	}
	a := Account(ledger, hist, nil)
	assert.Equal(t, 3, a.Results)
	assert.Equal(t, []Orphan{
		{StreamKey: StreamKey{Session: "s", RequestID: "2"}, N: 2, EventID: 9},
		{StreamKey: StreamKey{Session: "u", RequestID: "4"}, N: 4, Dropped: true},
	}, a.Orphaned, "a result the server dropped was never read either")

	// A client that surfaced the dropped call as unknown did not assume it.
	hist = append(hist, history.Record{Kind: history.KindUnknown, Session: "u", RequestID: "4"})
	a = Account(ledger, hist, nil)
	require.Len(t, a.Orphaned, 2)
	assert.True(t, a.Orphaned[1].Surfaced)
}

func TestAccountOutcomeReadsOnlyAResultAlreadyWrittenOrNamed(t *testing.T) {
	written := []sideeffects.Record{{Kind: sideeffects.KindResultWritten, Session: "s", RequestID: "1", EventID: 4, TUS: 100}}
	type outcome struct {
		kind    history.Kind
		at      int64
		eventID int64
		read    bool // read from the call's response
	}
	tests := []struct {
		name     string
		outcomes []outcome
		orphaned bool
	}{
		{"the client read the result and concluded unknown", []outcome{{history.KindUnknown, 150, 0, true}}, false},
		{"the client gave up before the result was written", []outcome{{history.KindUnknown, 50, 0, false}}, true},
		{"gave up, then read it on a later attempt", []outcome{{history.KindUnknown, 50, 0, false}, {history.KindUnknown, 120, 0, true}}, false},
		{"a naive client failed before the result was written", []outcome{{history.KindFail, 50, 0, false}}, true},
		{"a client gave up after the result was written, without it", []outcome{{history.KindFail, 150, 0, false}}, true},
		{"ok naming the result's event id", []outcome{{history.KindOK, 90, 4, true}}, false},
		{"ok read as JSON after the result (no event id)", []outcome{{history.KindOK, 110, 0, true}}, false},
		{"fail naming another event", []outcome{{history.KindFail, 50, 3, true}}, true},
		{"no outcome at all", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var hist []history.Record
			for _, o := range tc.outcomes {
				r := history.Record{TUS: o.at, Kind: o.kind, Session: "s", RequestID: "1", EventID: o.eventID}
				if o.read {
					r.Result = history.ResultRead
				}
				hist = append(hist, r)
			}
			a := Account(numbered(written...), hist, nil)
			assert.Equal(t, tc.orphaned, len(a.Orphaned) == 1)
		})
	}
}

func TestAccountCalls(t *testing.T) {
	inv := func(t int64, client, call, tool string) history.Record {
		return history.Record{TUS: t, Kind: history.KindInvoke, Client: client, Call: call, Tool: tool}
	}
	out := func(t int64, kind history.Kind, client, call string) history.Record {
		return history.Record{TUS: t, Kind: kind, Client: client, Call: call}
	}
	tests := []struct {
		name     string
		ledger   []sideeffects.Record
		hist     []history.Record
		outcomes []history.Kind
		invokes  []int
		retries  []BlindRetry
	}{
		{"ok", nil, []history.Record{inv(1, "c", "a", "charge"), out(2, history.KindOK, "c", "a")},
			[]history.Kind{history.KindOK}, []int{1}, nil},
		{"retried after a break, then ok", nil, []history.Record{inv(1, "c", "a", "charge"),
			{TUS: 2, Kind: history.KindStreamBreak, Client: "c", Call: "a"}, inv(3, "c", "a", "charge"), out(4, history.KindOK, "c", "a")},
			[]history.Kind{history.KindOK}, []int{2}, nil},
		{"never ended", nil, []history.Record{inv(1, "c", "a", "charge")}, []history.Kind{""}, []int{1}, nil},
		{"same call id, two clients", nil, []history.Record{inv(1, "c", "a", "chatty"), inv(1, "d", "a", "chatty"), out(2, history.KindFail, "d", "a")},
			[]history.Kind{"", history.KindFail}, []int{1, 1}, nil},
		{"unknown, then a blind retry", nil, []history.Record{inv(1, "c", "a", "charge"), out(2, history.KindUnknown, "c", "a"), inv(3, "c", "a", "charge")},
			[]history.Kind{""}, []int{2}, []BlindRetry{{Client: "c", Call: "a", OrderID: "a", Unknown: 2, Invoke: 3}}},
		{"lines out of time order", nil, []history.Record{inv(3, "c", "a", "charge"), inv(1, "c", "a", "charge"), out(2, history.KindUnknown, "c", "a")},
			[]history.Kind{""}, []int{2}, []BlindRetry{{Client: "c", Call: "a", OrderID: "a", Unknown: 3, Invoke: 1}}},
		{"unknown then retry of a keyed charge", []sideeffects.Record{{Kind: sideeffects.KindCharge, OrderID: "a", AmountCents: 1, IdempotencyKey: "k"}},
			[]history.Record{inv(1, "c", "a", "charge"), out(2, history.KindUnknown, "c", "a"), inv(3, "c", "a", "charge"), out(4, history.KindOK, "c", "a")},
			[]history.Kind{history.KindOK}, []int{2}, nil},
		{"unknown then retry of chatty", nil,
			[]history.Record{inv(1, "c", "a", "chatty"), out(2, history.KindUnknown, "c", "a"), inv(3, "c", "a", "chatty"), out(4, history.KindOK, "c", "a")},
			[]history.Kind{history.KindOK}, []int{2}, nil},
		{"tool from the ledger when the history omits it", []sideeffects.Record{{Kind: sideeffects.KindCallStarted, OrderID: "a", Tool: "charge"}},
			[]history.Record{inv(1, "c", "a", ""), out(2, history.KindUnknown, "c", "a"), inv(3, "c", "a", "")},
			[]history.Kind{""}, []int{2}, []BlindRetry{{Client: "c", Call: "a", OrderID: "a", Unknown: 2, Invoke: 3}}},
		{"unknown is an outcome", nil, []history.Record{inv(1, "c", "a", "charge"), out(2, history.KindUnknown, "c", "a")},
			[]history.Kind{history.KindUnknown}, []int{1}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Account(numbered(tc.ledger...), tc.hist, nil)
			var outcomes []history.Kind
			var invokes []int
			for _, c := range a.Calls {
				outcomes = append(outcomes, c.Outcome)
				invokes = append(invokes, c.Invokes)
			}
			assert.Equal(t, tc.outcomes, outcomes)
			assert.Equal(t, tc.invokes, invokes)
			assert.Equal(t, tc.retries, a.BlindRetries)
		})
	}
}

// Package sideeffects is the ledger: the harness's independent witness of
// what the system under test actually did.
//
// Tools record their side effects here (a charge), and the server records
// what it observed (sessions opened and closed, every event emitted, every
// result written or dropped). The checker trusts these records over anything
// the client or server claims about itself.
//
// The package holds the ledger alone: the record ([Record]), the durable
// store ([Store]), the HTTP service ([NewService]) and its [Client], and
// ledger.jsonl ([ReadLedger], [WriteLedger]). It imports no
// harness or targets package; reading the ledger against the clients'
// histories is the checker's job (harness/check).
//
// This file defines the record and the [Recorder] interface tools call.
package sideeffects

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// Kind names a ledger record.
type Kind string

// The record kinds. The fields each kind fills are listed beside it; Source,
// TUS and ID are always set.
const (
	// KindCharge: a charge was made. order_id, amount_cents, idempotency_key,
	// session, client, request_id.
	KindCharge Kind = "charge"
	// KindChargeDeduplicated: a charge was asked for under an idempotency key
	// already charged; no money moved. order_id, idempotency_key, session,
	// request_id.
	KindChargeDeduplicated Kind = "charge_deduplicated"
	// KindCallStarted: a tool invocation began on the server. tool, order_id,
	// session, client, request_id.
	KindCallStarted Kind = "call_started"
	// KindCallFinished: a tool invocation ended. tool, order_id, session,
	// request_id, is_error, reason.
	KindCallFinished Kind = "call_finished"
	// KindEventEmitted: a notification was written to a stream's event log.
	// session, request_id, stream, event_id (0 when the server cannot see
	// it), seq.
	KindEventEmitted Kind = "event_emitted"
	// KindResultWritten: a call's result was written to its stream's event
	// log (event_id 0 when the response was plain JSON). session,
	// request_id, stream, event_id, is_error.
	KindResultWritten Kind = "result_written"
	// KindResultDropped: a call finished but its session was already gone,
	// so the result went nowhere. session, request_id, reason.
	KindResultDropped Kind = "result_dropped"
	// KindSessionOpened: initialize created a session. session, client,
	// detail (protocol version).
	KindSessionOpened Kind = "session_opened"
	// KindSessionClosed: a session ended. session, reason (deleted | expired
	// | terminated | shutdown).
	KindSessionClosed Kind = "session_closed"
	// KindCallCancelled: the server saw a call's cancellation while its tool
	// ran (at 2026-07-28, its response stream closing). session (none at
	// 2026-07-28), client, request_id, order_id, reason.
	KindCallCancelled Kind = "call_cancelled"
)

// Kinds lists every record kind.
var Kinds = []Kind{
	KindCharge, KindChargeDeduplicated, KindCallStarted, KindCallFinished, KindEventEmitted,
	KindResultWritten, KindResultDropped, KindSessionOpened, KindSessionClosed, KindCallCancelled,
}

// Valid reports whether k is a known kind.
func (k Kind) Valid() bool { return slices.Contains(Kinds, k) }

// Record is one ledger entry. ID is chosen by the writer and makes writes
// idempotent: the ledger stores a record id once however often it is sent.
// N is assigned by the ledger on store (1, 2, ...) and orders the export.
type Record struct {
	ID             string `json:"id"`
	N              int64  `json:"n,omitempty"`
	TUS            int64  `json:"t_us"`
	Kind           Kind   `json:"kind"`
	Source         string `json:"source,omitempty"`
	Session        string `json:"session,omitempty"`
	Client         string `json:"client,omitempty"`
	RequestID      string `json:"request_id,omitempty"`
	Stream         string `json:"stream,omitempty"`
	Tool           string `json:"tool,omitempty"`
	OrderID        string `json:"order_id,omitempty"`
	AmountCents    int64  `json:"amount_cents,omitempty"`
	IdempotencyKey string `json:"idempotency_key,omitempty"`
	EventID        int64  `json:"event_id,omitempty"`
	Seq            int64  `json:"seq,omitempty"`
	IsError        bool   `json:"is_error,omitempty"`
	Reason         string `json:"reason,omitempty"`
	Detail         string `json:"detail,omitempty"`

	_ struct{} // keyed literals only: the record grows
}

// Validate reports why a record cannot be stored, or nil.
func (r *Record) Validate() error {
	switch {
	case r.ID == "":
		return errors.New("id is required")
	case len(r.ID) > 128:
		return errors.New("id is longer than 128 bytes")
	case !utf8.ValidString(r.ID):
		// JSON carries each invalid byte as U+FFFD: the ledger would store
		// another id, three bytes longer per byte, and ids differing only
		// in those bytes would be one.
		return errors.New("id is not valid UTF-8")
	case !r.Kind.Valid():
		return fmt.Errorf("unknown kind %q", r.Kind)
	case r.TUS < 0:
		return errors.New("t_us is negative")
	}
	switch r.Kind {
	case KindCharge:
		if r.OrderID == "" {
			return errors.New("charge: order_id is required")
		}
		if r.AmountCents <= 0 {
			return errors.New("charge: amount_cents must be positive")
		}
	case KindEventEmitted:
		// SDK servers do not show tools their event ids, so a sequence
		// number alone identifies the event within its call. A 2026-07-28
		// call has no session: its client stands in.
		if r.Session == "" && r.Client == "" || (r.EventID <= 0 && r.Seq <= 0) {
			return errors.New("event_emitted: session or client, and a positive event_id or seq are required")
		}
	case KindSessionOpened, KindSessionClosed:
		if r.Session == "" {
			return fmt.Errorf("%s: session is required", r.Kind)
		}
	case KindResultWritten, KindResultDropped, KindCallCancelled:
		if r.Session == "" && r.Client == "" {
			return fmt.Errorf("%s: session or client is required (2026-07-28 calls have no session)", r.Kind)
		}
	}
	return nil
}

// NewID returns a random 128-bit record id.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Recorder is what tools and servers write side effects through. Record
// returns only once the record is stored (durably, for a durable ledger).
// An empty ID is filled with [NewID] before sending, so a caller that
// retries must set the ID itself.
type Recorder interface {
	Record(ctx context.Context, r Record) error
}

// Memory is an in-process Recorder for tests and for targets run without a
// ledger service. It keeps records in order and stores each id once.
type Memory struct {
	mu      sync.Mutex
	recs    []Record
	seen    map[string]bool
	waiters []waiter
}

// waiter is a Next call still waiting for its record.
type waiter struct {
	match func(Record) bool
	ch    chan struct{}
}

// NewMemory returns an empty in-memory ledger.
func NewMemory() *Memory { return &Memory{seen: map[string]bool{}} }

// Record stores r unless its id was stored before.
func (m *Memory) Record(_ context.Context, r Record) error {
	if r.ID == "" {
		r.ID = NewID()
	}
	if err := r.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[r.ID] {
		return nil
	}
	m.seen[r.ID] = true
	r.N = int64(len(m.recs) + 1)
	m.recs = append(m.recs, r)
	kept := m.waiters[:0]
	for _, w := range m.waiters {
		if w.match(r) {
			close(w.ch)
			continue
		}
		kept = append(kept, w)
	}
	m.waiters = kept
	return nil
}

// Next returns a channel closed once a record matching match is stored
// after the call, so a test waits on the event it expects instead of on
// time.
func (m *Memory) Next(match func(Record) bool) <-chan struct{} {
	ch := make(chan struct{})
	m.mu.Lock()
	m.waiters = append(m.waiters, waiter{match: match, ch: ch})
	m.mu.Unlock()
	return ch
}

// Of returns the stored records of kind k, in store order.
func (m *Memory) Of(k Kind) []Record {
	var out []Record
	for _, r := range m.Records() {
		if r.Kind == k {
			out = append(out, r)
		}
	}
	return out
}

// Records returns a copy of everything stored, in store order.
func (m *Memory) Records() []Record {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.recs)
}

// Count returns how many stored records have kind k.
func (m *Memory) Count(k Kind) int { return len(m.Of(k)) }

// Package store is the reference server's per-session event log: sessions,
// their streams, every event with its integer id, the requests a stream still
// owes a response to, and the idempotency keys the charge tool has used.
//
// # Model
//
// Each session numbers its events 1, 2, 3, ... across all of its streams.
// Every id belongs to exactly one stream: stream 0 is the standalone GET
// stream, and streams 1, 2, ... are POST response streams in order of
// creation. The id→stream mapping is kept as run-length ranges for every id
// ever issued, so that a Last-Event-ID whose event has been evicted can still
// be attributed to its stream and answered precisely (see [Session.Locate]).
//
// Retention bounds the events a session keeps: at most
// [Options.RetentionEvents] (oldest evicted first) and none older than
// [Options.RetentionAge]. A cursor L on stream S is honourable while no event
// of S with an id above L has been evicted.
//
// # Durability
//
// With [Options.Path] empty the store lives in memory only. With a path it
// is a write-ahead journal on [appendlog]: every change (session opened or
// closed, stream opened, event appended, request settled, key reserved) is
// appended and fsync'd before it is applied in memory and before anything
// depends on it, so an event the server has put on the wire is never lost to
// a crash, SIGKILL included. An fsync'd append log fits because the access
// pattern is append-only writes and sequential replay on start: there are
// no random reads to serve from disk (reads come from memory), recovery is a
// single scan with torn-tail truncation, and appendlog's group commit lets
// the concurrent appends of many sessions share one fsync. Opening replays
// the journal, applies retention to what it recovers, and reports the
// requests that were still awaiting a response ([Store.Pending]) so the
// server can resolve them.
package store

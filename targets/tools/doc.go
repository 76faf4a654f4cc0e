// Package tools is the workload's two tools, charge and chatty, written
// once for every server chaosrun ships: the reference server
// (targets/server) and the SDK adapters (targets/gosdk and targets/mcpgo,
// through targets/sdkserver). A server that hosts them differs from another
// only through the hooks below, so every target decodes the same arguments
// within the same bounds, runs for the same time and writes the same ledger
// records with the same fields, stamped the same way.
//
// # What the tools do
//
// charge {order_id, amount_cents, idempotency_key?, duration_ms?} waits
// duration_ms (the host's default when 0 or absent), then records exactly
// one charge, or charge_deduplicated when its idempotency key was charged
// before. chatty {events, interval_ms?} emits events numbered progress
// notifications, event i due at start + i × interval_ms, and returns how
// many it emitted. Arguments must be a JSON object; unknown members are
// ignored; the bounds are [MaxChattyEvents] and [MaxDuration]. A tool's
// structured result is also its text content, as the specification
// recommends: {"charged":true,"order_id":…,"amount_cents":…,
// "deduplicated":true?}, {"emitted":N}, or {"error":reason,"message":…}
// with isError set.
//
// # What the core records and what the host records
//
// [Runner.Run] writes call_started, then the tool's own records: charge or
// charge_deduplicated, and event_emitted for every event. Only the host
// knows where a result went and when a call is over, so the host writes
// result_written or result_dropped and then call_finished, building them
// with [Call.ResultWritten], [Call.ResultDropped] and [Call.Finished] so
// that their fields are the same everywhere. Every record goes through a
// [Ledger], which gives it a fresh id, the run clock's time and the
// server's source. Only a failed charge record changes what a tool does (it
// answers ledger_failed and frees the idempotency key): an observation the
// ledger missed cannot be taken back, so it is logged and the tool goes on.
//
// # The hooks
//
//   - Cancellation is the ctx given to [Runner.Run]: the tool's life, never
//     the request's. A dropped connection must not end a tool (disconnect
//     is not cancel), so a host passes a context that only its own
//     cancellation or shutdown ends. When it ends the tool returns an
//     [Outcome] with Interrupted set and no result; what that means (an
//     answer, a cancelled call, a call left for a restart to resolve) is
//     the host's decision. Records are written with the cancellation
//     stripped, so an interrupted tool still tells the ledger what it did.
//   - A request's own cancellation, apart from ctx, is the channel given to
//     [Runner.RunRequest]: at 2026-07-28 closing a response stream cancels
//     its request. The core records call_cancelled the moment it sees it
//     and then does what [Config].OnCancel says: stop (before the side
//     effect; no result), ignore (finish and produce a result for the host
//     to drop) or commit_then_notice (the charge was committing when the
//     cancellation came: it is made at once, then the tool stops without a
//     result). chatty has nothing to commit and stops unless ignoring. A
//     cancelled outcome has Cancelled set and reason "cancelled".
//   - [Emit] sends one progress notification on the call's stream. Before
//     the notification can reach a client it calls back with the stream's
//     name and the event id it got, or "" and 0 where the host cannot see
//     them (an SDK); the core records event_emitted from that callback. An
//     error wrapping [ErrSessionGone] ends chatty without an error (the
//     result says how many were emitted); any other error ends it with
//     emit_failed. A host that cannot know whether a notification arrived
//     returns nil: whether it arrived is what the checker measures.
//   - [Keys] reserves and releases idempotency keys: the reference server's
//     event store (durable with the file store), or [MemoryKeys].
package tools

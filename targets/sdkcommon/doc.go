// Package sdkcommon holds what the real-SDK targets (targets/gosdk and
// targets/mcpgo) share, so that both SDKs run the same tools, write the same
// ledger records and produce the same client history, and differ only where
// the SDKs themselves differ.
//
// Server side:
//   - [Tools] is the business logic of the charge and chatty tools and the
//     ledger writes around them (call_started, charge or
//     charge_deduplicated, event_emitted, call_finished, result_written) and
//     around session lifecycle (session_opened, session_closed). A tool keeps
//     running when its connection drops: the SDK's request context is never
//     taken as a cancellation, only [Tools.Shutdown] is.
//   - [Front] wraps an SDK's HTTP handler: it passes the JSON-RPC id of a
//     tools/call to the tool in the [RequestIDHeader] header (neither SDK
//     shows tools the request id) and notes DELETEs so a session closed by
//     the client is recorded with reason "deleted".
//   - [MountControl] serves /control/healthz, /control/status,
//     /control/expire and /control/terminate the way the reference server
//     does, answering 501 with a JSON reason for what an SDK cannot do.
//
// Client side:
//   - [Tracker] writes the history of one logical client driven through an
//     SDK's own client. Its [Tracker.Transport] is an http.RoundTripper put
//     under the SDK's HTTP client: it sees every POST and GET the SDK makes
//     and reads the bytes the SDK reads, and from them records what the SDK
//     does not report itself: the invoke with its JSON-RPC request id, the
//     event id of every progress notification, stream breaks, reconnects
//     with Last-Event-ID and resumes. Outcomes are resolved from what was
//     seen on the wire (see [Call.End]).
package sdkcommon

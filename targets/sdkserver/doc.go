// Package sdkserver is what the real-SDK servers (targets/gosdk and
// targets/mcpgo) share around the SDK's own handler, so that both serve the
// same tools, write the same ledger records and answer the same control
// endpoints, and differ only where the SDKs themselves differ.
//
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
package sdkserver

// Package sdkserver is what the real-SDK servers (targets/gosdk and
// targets/mcpgo) share around the SDK's own handler, so that both serve the
// same tools, write the same ledger records and answer the same control
// endpoints, and differ only where the SDKs themselves differ.
//
//   - [Host] runs the tool core (targets/tools) inside an SDK tool handler.
//     A tool keeps running when its connection drops: the SDK's request
//     context is never taken as a cancellation, only [Host.Shutdown] is.
//     An SDK shows a tool neither event ids nor whether a result reached a
//     stream, so events are recorded with event id 0 before they are handed
//     to the SDK ([Host.Emit]), and result_written means handed back to the
//     SDK, recorded when the handler returns, before call_finished. Host
//     also records the session lifecycle an SDK exposes (session_opened,
//     session_closed) and keeps idempotency keys in memory.
//   - [Front] wraps an SDK's HTTP handler: it passes the JSON-RPC id of a
//     tools/call to the tool in the [RequestIDHeader] header (neither SDK
//     shows tools the request id) and notes DELETEs so a session closed by
//     the client is recorded with reason "deleted".
//   - [MountControl] serves /control/healthz, /control/status,
//     /control/expire and /control/terminate the way the reference server
//     does, answering 501 with a JSON reason for what an SDK cannot do.
package sdkserver

// Package client holds the two MCP Streamable HTTP clients chaosrun puts
// under fault: naive, which does what the incident's client did, and
// resumable, which follows the incident record's decision procedure.
//
// Both speak Streamable HTTP to one endpoint: initialize (clientInfo.name is
// the logical client id), notifications/initialized, then one tools/call POST
// per call, its response read as an SSE stream (or JSON when the server
// answers JSON). Everything they see and decide goes to the run's
// history.jsonl (see targets/history).
//
// # Naive
//
// On any stream error or non-2xx answer the naive client drops its session
// id without a DELETE (session_lost "abandoned"), initializes again and
// invokes the same call anew, up to Backoff.Retries times with
// Backoff.Initial between attempts, then records fail. A server close event
// is, to it, one more broken stream. It keeps no cursor and never sends
// Last-Event-ID: against a long charge cut by a load balancer it charges
// twice.
//
// # Resumable
//
// The resumable client turns every way a stream can end into a [Close] and
// acts on [Classify]'s [Action]:
//
//   - a transport error (reset, EOF, timeout) or a 5xx: reconnect by GET with
//     Last-Event-ID set to the last persisted event id of the call's stream,
//     with exponential backoff and jitter, never sooner than the server's
//     retry field, at most Backoff.Retries attempts. With no event id
//     persisted there is nothing to resume from, and the call is unknown.
//   - 404: the session is gone. The in-flight call is unknown (an idempotent
//     call is invoked again on a new session instead); later calls use a
//     new session.
//   - 410, or 409 with a head_event_id in its body: events were lost. The
//     gap is recorded and the stream resumed at the head, or, when the body
//     names it, at resume_event_id: the earliest cursor the server can still
//     honour. That refines the record's "reconnect at head": the gap holds
//     only the evicted events, and a result written while the client was
//     away (the stream's newest event) is still delivered. That reconnect
//     goes at once, with no backoff: waiting would only let more events
//     past the server's retention (an attempt all the same, counted
//     against Backoff.Retries).
//   - 409 or 410 without a head id: events were lost and the server named
//     no place to reconnect. The client records an open-ended gap after its
//     cursor and the call is unknown: retrying the same cursor would meet
//     the same answer. (The reference server no longer answers a half-open
//     connection's stream with 409: the newer connection takes it over, so
//     409 keeps the incident record's meaning.)
//   - an SSE close event: the session is ending; the call is unknown, the
//     remaining calls are not made and the client stops.
//   - any other status: unknown, because guessing would risk a duplicate.
//
// It does not compare progress sequence numbers to spot missing events: it
// trusts the server's answer to Last-Event-ID exactly as the decision
// procedure does, so a server that silently resumes at the head loses
// events without the client noticing.
//
// # 2026-07-28
//
// With Options.Protocol 2026-07-28 both clients speak the stateless
// revision: server/discover instead of initialize (a server that does not
// list 2026-07-28 is an error, not a fallback), every request carrying
// MCP-Protocol-Version, Mcp-Method, Mcp-Name and the per-request _meta
// (version, clientInfo named after the logical client, capabilities), and
// request ids that name the client ("c1-7"), since no session tells one
// client's requests from another's. No session is opened or lost, and
// nothing is resumed: closing a stream cancels its call on the server.
// The naive client issues the call again after any break, as a migrating
// client does. The resumable client issues it again only when that is
// harmless (an idempotent call, or a charge carrying an idempotency key the
// server deduplicates), after its backoff; any other call broken mid-stream
// is unknown, never issued again, because a cancelled call may have
// committed before it noticed.
//
// # Tasks
//
// With Options.Tasks the resumable client follows tasks: "extension" at
// 2026-07-28 (it declares io.modelcontextprotocol/tasks and polls tasks/get,
// whose answer carries the result), "legacy" at 2025-11-25 (a tool is
// called with params.task when the session's initialize declared
// tasks.requests.tools.call and tools/list gives the tool
// execution.taskSupport optional or required; it polls tasks/get at the
// server's pollInterval, or its backoff's initial delay when there is
// none, and fetches the result once by tasks/result when the task is
// terminal). The task id, and at 2025-11-25 the call's session and the
// tools run as tasks, are saved in the cursor before the first poll, so a
// restarted client polls the same task. A broken or refused poll is
// repeated after the backoff; at 2025-11-25 a 404 opens a new session to
// poll from. A task the server no longer knows (-32602), one cancelled,
// or one failed without a tool result is an unknown outcome: the call is
// never issued again.
//
// # Cursor
//
// The resumable client keeps a [Cursor]: its session, the completed calls
// and the call in flight with the last event id of its stream. The memory
// store forgets it with the process; the file store writes it atomically and
// fsyncs it before an event is handed on and before a call is invoked, so a
// client killed and started again resumes the same stream and never invokes
// an in-flight call a second time.
//
// A stream's event ids are kept as the server sent them (the go-sdk server
// sends "<stream>_<n>"). History records carry them as integers: the whole id
// when it is a number, otherwise its trailing run of digits.
package client

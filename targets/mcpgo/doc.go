// Package mcpgo puts github.com/mark3labs/mcp-go v1.2.1 (pinned in go.mod;
// [SDKVersion]) under chaosrun's faults: a server ([NewServer]) that is the
// SDK's StreamableHTTPServer, stateful and with an event store, serving the
// charge and chatty tools, and a client ([RunClient]) that is the SDK's own
// client (client.NewStreamableHttpClient). Both write the same ledger
// records and history as the reference targets: the tools are the
// reference server's own (targets/tools), run through targets/sdkserver,
// and the client's history comes from targets/sdkclient.
//
// What follows is how v1.2.1 behaves, read from its sources
// (server/streamable_http.go, server/streamable_http_resume.go,
// server/event_store.go, client/transport/streamable_http.go) and pinned by
// the *_CurrentBehaviour tests of the SDK suite (targets/sdksuite), whose
// table states these differences as data, so that a change in the SDK fails
// a test.
//
// # Server
//
//   - The server is built WithStateful(true): mcp-go's default session
//     manager validates only the format of a session id and never answers
//     404. Stateful, a POST for an unknown or terminated session gets 404
//     ("Invalid session ID", "Session terminated"). A GET without
//     Last-Event-ID is not checked: for an unknown id it opens a new
//     listening stream (200) under that id.
//   - Event ids are integers issued by the store, increasing across the
//     whole store. There is no priming event, no retry field and no close
//     event. A call's response is plain JSON unless the tool sent a
//     notification first, which turns the response into an event stream.
//   - A dropped POST connection cancels the tool's context (the adapter's
//     tools keep running regardless; call_finished notes the cancellation).
//     From then on the call's notifications no longer go to its stream: they
//     go to the session's standalone stream if one was ever opened, else they
//     queue (100 deep, then refused). The result is recorded for resumption
//     only if the response had become an event stream; a charge (no
//     notifications) dropped mid-call loses its result.
//   - Even with no fault, a session's notifications are read from one
//     channel by both the call's stream and the standalone stream, so a
//     client with a standalone GET (the go-sdk client) gets a call's progress
//     split between the two, sometimes after the result, and loses what it
//     does not read before it leaves.
//   - Last-Event-ID: an id the store does not hold (evicted, purged with its
//     session, or never issued) gets 400 "Unknown Last-Event-ID" in plain
//     text; a store error gets 500. A resume replays the stream after the id
//     and takes the stream over (a newer connection supersedes an older one;
//     no 409); the last id of a finished stream gets 200 and an empty stream.
//   - Retention: the SDK's InMemoryEventStore keeps a session's events until
//     the session ends. ServerConfig.RetentionEvents > 0 swaps in this
//     package's store, behind the SDK's EventStore interface, keeping the
//     newest RetentionEvents events of each session.
//   - Sessions: DELETE, the idle sweeper and /control/expire terminate the
//     id and purge its events at once; a call still running finishes, and
//     its result still reaches the client if the call's POST is open.
//     SessionTTL is WithSessionIdleTTL; the sweeper runs every
//     max(TTL/2, 1 s), so expiry can come that much late.
//   - The server never answers 5xx by itself, except 500 for a failing store.
//   - Tasks (ServerConfig.Tasks "legacy": WithTaskCapabilities(list,
//     cancel, tools/call), every tool execution.taskSupport optional): the
//     SDK's own 2025-11-25 tasks. A tools/call with params.task answers a
//     CreateTaskResult at once, with the ttl the client asked for (null,
//     unlimited, when it asked for none) and no pollInterval, so a client
//     polls at its own pace. tasks/get carries no result; tasks/result
//     blocks until the task is terminal and hands the result out (with the
//     related-task _meta) as often as asked. Tasks are bound to the session
//     that made them: another session, a re-initialized client's included,
//     gets -32602 "task not found". The store is the process's memory: a
//     restarted server knows no task ("task not found"). A ttl deletes the
//     task when it runs out, running or not ("task has expired", for five
//     minutes, then "task not found"), and cancels its handler's context.
//     tasks/cancel turns a working task cancelled at once and cancels the
//     handler's context (the adapter's tools run on regardless, so a
//     cancelled charge still charges), refuses a terminal one with -32602;
//     tasks/result of a cancelled task is an empty, successful result.
//     notifications/tasks/status goes to every session.
//
// Ledger lifecycle: session_opened from the AfterInitialize hook,
// session_closed from OnUnregisterSession ("deleted" after a DELETE,
// "expired" after /control/expire or the sweeper, "shutdown" after Close).
// A listening session opened by a GET without initialize is not recorded.
// Tools cannot see event ids (event_id 0) nor whether a result reached a
// stream: result_written means handed to the SDK, and for a task the
// result handed out by tasks/result (the AfterTaskResult hook), on stream
// task:<id>, the task's id reaching the tool from the OnTaskCreated hook. The JSON-RPC request id
// reaches the tool through sdkserver.Front. /control/expire goes through the
// SDK's own DELETE handling; /control/terminate answers 501: mcp-go sends
// no close event.
//
// # Client
//
//   - A stream that breaks off (reset, unexpected EOF, timeout) is never
//     resumed: the call fails at once ("unexpected nil response", or the
//     POST's transport error) and the adapter records unknown. The session
//     is kept and later calls use it.
//   - Only a stream the server ends cleanly after an event id and before the
//     response (SEP-1699 polling) is resumed, by GET with Last-Event-ID,
//     after the server's retry field (at least 10 ms) or 1 s, again each time
//     the server ends cleanly. Any status other than 200 fails the call at
//     once, with no retry: 503 and 400 ("unexpected status N"), and 404.
//   - 404 on a POST is ErrSessionTerminated: the transport refuses every
//     request but initialize until a new session starts; the SDK does not
//     re-initialize by itself. The adapter records session_lost
//     "status_404" and initializes again before the next call.
//   - No standalone GET stream is opened (WithContinuousListening is off by
//     default). No reconnection knobs exist: workload.Backoff is not
//     applicable, nor is Options.ReadTimeout. Last-Event-ID lives in memory
//     only, and the SDK never reports a gap.
//   - Asking for a protocol version before 2026-07-28 (the adapter asks for
//     workload.Options.Protocol, else 2025-11-25) skips the server/discover
//     probe and keeps sessions.
//
// The adapter reports stream_break, reconnect and resume by observing the
// SDK's HTTP traffic (sdkclient.Tracker): the SDK exposes no such callbacks.
package mcpgo

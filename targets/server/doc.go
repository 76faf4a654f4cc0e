// Package server is chaosrun's reference MCP server: a spec-following,
// dual-era Streamable HTTP server (the stateless 2026-07-28 beside
// 2025-03-26, 2025-06-18 and 2025-11-25, which have sessions) whose every
// knob is real behaviour an experiment can put under fault. `chaosrun agent
// server` wraps it.
//
// # Endpoint /mcp
//
// POST carries JSON-RPC requests, notifications and responses. Requests
// are answered on a text/event-stream response when the Accept header
// allows it, else as application/json; the SSE response ends once every
// request of the POST has its response written. Notifications and
// responses alone get 202. GET opens the standalone SSE stream, or, with
// Last-Event-ID, resumes the stream that id belongs to. DELETE ends the
// session. initialize creates a session with a 128-bit random id
// (Mcp-Session-Id, hex) and negotiates the client's version when supported,
// else the latest.
//
// The Origin header is checked first, on every path: absent, or http(s)
// on a loopback host (localhost, *.localhost, 127.0.0.0/8, ::1), or listed
// in Config.AllowedOrigins ("*" allows any; scheme and host compare
// case-insensitively, ports exactly) passes; anything else is a DNS
// rebinding attempt and gets 403.
//
// Checks run in a fixed order and the first failing one answers: Origin not
// allowed (403), method (405), shutting down (503), Content-Type (415),
// Accept (406), body over 4 MiB (413), unparsable body (400 with a JSON-RPC
// error, id null), MCP-Protocol-Version present but not one supported
// version (400), initialize in a batch or with a session id (400), no
// Mcp-Session-Id (400), unknown or ended session (404), MCP-Protocol-Version
// different from the session's (400), a batch on a session newer than
// 2025-03-26 (400), then for a resume a malformed or never-issued
// Last-Event-ID (400), a stream already attached (409), and an
// unhonourable id (410 or silent_head, below).
//
// An absent MCP-Protocol-Version header means the session's negotiated
// version. The specification's fallback to 2025-03-26 applies when a server
// has no other way to know the version; a session is such a way, so a
// client that omits the header is neither refused nor downgraded.
//
// # 2026-07-28
//
// The era is chosen per request, as the specification's backward
// compatibility rules say: initialize selects a legacy session; a POST
// whose MCP-Protocol-Version is 2026-07-28, or whose message carries
// _meta io.modelcontextprotocol/protocolVersion, or that is
// server/discover, or that names a version the server does not know
// without a session, is served statelessly. Such a POST carries one
// message; a notification gets 202; a request is checked in order: one
// MCP-Protocol-Version (else 400, -32020 HeaderMismatch), naming 2026-07-28
// (else 400, -32022 UnsupportedProtocolVersionError with data {"supported":
// every version, newest first, "requested"}), equal to _meta's (-32020),
// Mcp-Method equal to the method (-32020), and for tools/call, prompts/get
// and resources/read Mcp-Name, after decoding the =?base64?…?= form, equal
// to params.name or params.uri (-32020). Mcp-Session-Id and Last-Event-ID
// are ignored and no session id is minted or echoed; GET and DELETE with
// MCP-Protocol-Version 2026-07-28 get 405 (Allow: POST). server/discover
// lists the supported versions, the tools capability and serverInfo in
// _meta; an unknown method gets 404 with -32601. Results carry resultType
// "complete".
//
// A tools/call is answered on an SSE stream (progress notifications
// without event ids, keepalive comments, then the result) or, for a client
// accepting only JSON, as application/json without progress. There is no
// event log: the connection is the stream, and closing it before the
// result is the call's cancellation, as the specification requires. The
// tool core records call_cancelled at that moment and then does what
// Config.OnCancel says (stop, ignore, commit_then_notice; package
// targets/tools); no message follows, and a result the tool produces anyway
// is recorded as result_dropped "cancelled". Ledger records of these calls
// have no session: the client is _meta's clientInfo.name ("anonymous"
// without one), the request id is the JSON-RPC id. On shutdown such a
// stream drains like any other; when the drain is over it closes, which
// cancels the call.
//
// # Tasks
//
// With Config.Tasks "extension" (the io.modelcontextprotocol/tasks
// extension of 2026-07-28) server/discover lists the extension, and a
// tools/call whose _meta clientCapabilities declare it is answered at once
// with a CreateTaskResult (resultType "task", taskId, status working,
// createdAt, lastUpdatedAt, ttlMs, pollIntervalMs) once the task is stored.
// The tool runs on the server's life, not the connection's: no closing
// stream cancels a task; tasks/cancel does, and the tool then does what
// Config.OnCancel says. tasks/get (Mcp-Name the task id, the capability
// declared, else -32021) returns the task with resultType "complete" and,
// once completed, the tools/call result inlined; each such answer is
// recorded as result_written on stream "task:<id>", so the checker sees how
// often a result was fetched. An unknown id, or one past its ttlMs, gets
// -32602 ("Failed to retrieve task: task not found" or "... task has
// expired"). The "memory" task store dies with the process; the "file"
// store journals every change with fsync before it is visible, and on
// start fails a task left working with the error interrupted_by_restart
// (the client must treat it as an unknown outcome).
//
// With Config.Tasks "legacy" (the experimental tasks of 2025-11-25, on
// 2025-11-25 sessions only; other revisions see no tasks) initialize
// declares tasks {list, cancel, requests.tools.call} and tools/list gives
// every tool execution.taskSupport "optional". A tools/call with
// params.task is answered with a CreateTaskResult ({"task": {taskId,
// status, createdAt, lastUpdatedAt, ttl, pollInterval}}) once the task is
// stored; a call without it runs as usual. The ttl is the one asked for,
// capped at Config.TaskTTL. tasks/get returns the task (no result);
// tasks/result blocks until the task is terminal and returns the tool's
// result with _meta io.modelcontextprotocol/related-task, recorded as
// result_written on stream "task:<id>" for the tools/call (its session and
// request id) at each hand-out; a task failed without a result answers the
// JSON-RPC error it ended with (interrupted_by_restart), a cancelled one
// an error saying so. A tool result with isError fails the task (its
// result is still what tasks/result returns). tasks/list pages 50 tasks at
// a time (an opaque cursor; a bad one is -32602). tasks/cancel turns a
// working task cancelled, durably, before it answers with the task, and
// refuses a terminal one with -32602; the tool does what Config.OnCancel
// says and the task stays cancelled. notifications/tasks/status goes on
// the standalone stream of the task's session when the task ends or is
// cancelled. Tasks are not bound to a session (there is no authorization
// context to bind them to; ids are 128-bit random): a client that lost its
// session polls its task from a new one. Both shapes share the task store
// (memory, file, redis), its journal, drop_tasks and the tools' run; past
// its ttl a task of either shape is deleted, whatever its status
// ("task has expired").
//
// # Event log and resumption
//
// Every session numbers its events 1, 2, 3, ... across its streams, and
// each id belongs to one stream (package store). A connection is only a
// viewport onto a stream: when it drops, the stream and the tool behind it
// carry on, and a GET with Last-Event-ID replays that stream's events after
// the id, then continues live (for a POST stream, until its response is
// written). A stream takes one connection at a time, and the newer
// connection wins: a client reconnects because it believes its old
// connection dead, while the server often still holds it half-open (a load
// balancer cut it without a word), so the old connection is ended (its
// writes failed after 100 ms) and the new one replays from its cursor. 409
// {"error":"stream_attached"} is left only for an old connection that has
// not let go after 2 s. That keeps 409 for what the incident record reads
// it as (events lost): the resumable client surfaces a 409 or 410 that
// names no head id as a loss and never retries the same cursor.
//
// On 2025-11-25 sessions every stream the server opens starts with a
// priming event (an id, empty data, `retry:`): a new stream with a fresh
// id, a resumed one with its cursor repeated (the Last-Event-ID, or the
// head under silent_head), so that a resumed connection cut before its
// first event still leaves the client a cursor and a retry time.
// Config.Retry is DefaultRetry (1 s) unless set.
//
// Retention keeps at most Config.RetentionEvents events per session and
// none older than Config.RetentionAge. A Last-Event-ID L on stream S is
// honourable while no event of S newer than L has been evicted. When it is
// not, "gone" answers 410 with
// {"error":"resume_window_exceeded","last_event_id":L,"oldest_retained_id":M,"head_event_id":H,"resume_event_id":E},
// H being S's newest id, M its oldest retained id (0 if none) and E its
// newest evicted id. Resuming at E or at H is honourable; E loses only the
// evicted events (L, E] and replays everything retained, including a result
// written while the client was away, which resuming at H would skip when it
// is the stream's newest event. "silent_head" answers 200 and continues at head
// without a word: that is the incident's bug, kept so experiments can
// reproduce silent event loss. A live connection that falls behind
// retention is ended under "gone" (its resume then meets the 410) and
// silently moved to head under "silent_head".
//
// # Tools
//
// The tools are package targets/tools, the same for every server target;
// the server hosts them on its event log and its store. charge {order_id,
// amount_cents, idempotency_key?, duration_ms?} runs for duration_ms
// (Config.DefaultChargeDuration when 0 or absent), then records exactly one
// ledger charge, or charge_deduplicated when its idempotency key was
// charged before (the file store remembers keys across restarts). chatty
// {events, interval_ms} emits events numbered notifications/progress
// (progress 1..events, total events), event i due at start + i ×
// interval_ms, on the call's stream. It uses the request's
// _meta.progressToken and, when there is none, the request id as the
// token: a liberty, since the specification sends progress only to clients
// that asked for it, and the harness wants the events either way. A call
// answered as JSON cannot carry events, so its progress goes to the
// standalone stream.
//
// A tool keeps running when its POST connection drops (disconnect is not
// cancel) and when its session ends; only notifications/cancelled, the
// shutdown deadline and Close stop it. Its result goes to the event log for
// a later resume, or is recorded as dropped when the session is gone.
//
// # Ledger
//
// Every observation goes to Config.Recorder with a fresh id, the run
// clock's time and Config.Source: session_opened (client, detail =
// protocol version) and session_closed (deleted | expired | terminated |
// shutdown); call_started and call_finished; charge and
// charge_deduplicated; event_emitted, recorded before the event is written
// to the log; result_written (before the result is written; event_id 0 for
// a JSON answer) or result_dropped. Results are recorded for tool calls
// only, not for initialize, ping or tools/list.
//
// # Sessions
//
// A session is idle when no request of it is in progress and no connection
// is attached; a running tool does not keep it alive. After Config.SessionTTL
// idle it expires: later requests get 404 and the ledger records
// session_closed "expired". The control endpoint can expire a session, or
// terminate it with an SSE `close` event on its attached connections.
//
// # Shutdown
//
// Shutdown (SIGTERM in the agent) refuses new requests with 503 and ends
// standalone streams with a retry hint (an SSE block holding only
// `retry:`), then drains: running tools finish. With the memory store a
// result that finishes during the drain is written on the connection still
// attached to its stream, which is its only way out; with the file store
// every stream's connection ends at once with the hint, and the result
// goes to the journal for the restarted server to replay, so the deploy is
// not held up by a long call's connection. 2026-07-28 streams always
// drain. When the drain deadline passes, the remaining connections get the
// hint and end, and the tools still running are cancelled, their calls
// unresolved.
//
// # Stores and restarts
//
// The "memory" store dies with the process. The "file" store (package
// store) journals sessions, streams, events, pending requests and
// idempotency keys with fsync before anything depends on them, so a
// restart, graceful or SIGKILL, loses nothing a client was sent. On start
// every request left pending is resolved, a tool call with an error result
// whose structuredContent is {"error":"interrupted_by_restart"}: the
// client must treat that as an unknown outcome.
//
// The "redis" store is the file store's journal in a Redis stream shared by
// the replicas of one deployment (store.Shared): each replica applies the
// others' records as they come, and a request for a session it has not
// seen makes it catch up with the journal before answering 404, then take
// the session over (its own idle timer). A restarted replica resolves only
// the requests it owned (Config.StoreOwner); another replica's are that
// replica's to resolve, and reach the client wherever it is attached.
//
// Tasks have their own store (Config.TaskStore): memory, a file journal, or
// "redis", a task journal in its own Redis stream that every replica
// appends each task's changes to before anyone sees them. A replica polled
// for a task it does not know, or knows as working, catches up on that
// journal first, so a tasks/get that lands on another replica than the one
// running the task is answered; only the running replica can cancel it, and
// a restarted replica fails the tasks it owned with interrupted_by_restart.
//
// # Control endpoint
//
// On the same listener, for the harness: GET /control/healthz,
// GET /control/status ({"sessions","inflight_calls","attached_streams"}),
// POST /control/expire[?session=ID] and POST /control/terminate[?session=ID]
// (both answer {"sessions":[ids]}), and POST /control/drop_tasks, which makes
// the task store forget every task ({"tasks":[ids]}; 404 with tasks off).
package server

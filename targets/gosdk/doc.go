// Package gosdk puts the official MCP Go SDK, github.com/modelcontextprotocol/go-sdk
// v1.8.0 (pinned in go.mod; [SDKVersion]), under chaosrun's faults: a server
// ([NewServer]) that is the SDK's StreamableHTTPHandler with a
// MemoryEventStore serving the charge and chatty tools, and a client
// ([RunClient]) that is the SDK's own client over its
// StreamableClientTransport. Both write the same ledger records and history
// as the reference targets: the tools are the reference server's own
// (targets/tools), run through targets/sdkserver, and the client's history
// comes from targets/sdkclient, which says how the SDK's traffic is
// observed.
//
// What follows is how v1.8.0 behaves, read from its sources (mcp/streamable.go,
// mcp/event.go, mcp/server.go, mcp/client.go) and pinned by the
// *_CurrentBehaviour tests of the SDK suite (targets/sdksuite), whose table
// states these differences as data, so that a change in the SDK fails a
// test.
//
// # Server
//
//   - Event ids are "<stream>_<index>", the index counting from 0 within a
//     stream; history and ledger records carry the index. On 2025-11-25 (with
//     an event store) every POST stream opens with a priming event (empty
//     data, index 0) but no retry field; the only retry field the SDK sends is
//     in a close event a running tool can ask for (RequestExtra.CloseSSEStream).
//   - A dropped POST connection does not cancel the tool on protocols before
//     2026-07-28: the handler's context is detached from the request. What the
//     tool sends afterwards, its result included, goes to the event store
//     and is replayed to a GET with Last-Event-ID; a resumed stream carries
//     the missed events and the result, then ends.
//   - Last-Event-ID: malformed gets 400 "malformed Last-Event-ID"; an id whose
//     events the store dropped (or an unknown stream) gets 400 "failed to
//     replay events" in plain text — eviction is indistinguishable from a bad
//     request; the last id of a finished stream gets 200 and an empty stream;
//     a stream already attached to a live connection gets 409.
//   - Retention: MemoryEventStore bounds bytes, shared by every session of the
//     process, and drops the oldest event of every stream in turn.
//     ServerConfig.RetentionEvents maps onto SetMaxBytes as
//     RetentionEvents × [BytesPerEvent], so the bound is approximate and not
//     per session.
//   - Sessions: 404 "session not found" for an unknown id on POST, GET and
//     DELETE. Closing a session (DELETE, the idle timeout, /control/expire)
//     waits for its in-flight calls to return: meanwhile new requests on it
//     are still accepted and answered 200 with a priming event and no
//     response, and when the call returns its result is dropped (its stream
//     ends after the priming event). Only then does the session answer 404.
//   - SessionTTL is StreamableHTTPOptions.SessionTimeout (idle = no HTTP
//     request; paused while a POST is in flight).
//   - The server never answers 5xx by itself, except 500 when a session or a
//     stream cannot be created.
//   - 2026-07-28 needs StreamableHTTPOptions.Stateless ([ServerConfig].Stateless,
//     set when the experiment's client speaks it): every POST is served by a
//     throwaway session, GET and DELETE get 405 (Allow: POST), no
//     Mcp-Session-Id is read or set; server/discover lists 2026-07-28 and the
//     session revisions; Mcp-Method or Mcp-Name not the body's gets 400 with
//     -32020; a missing _meta version 400 with -32602; an unknown version
//     newer than 2026-07-28 400 with -32022 and the supported list, an older
//     one 400 in plain text. The session revisions are still served, one
//     request at a time, with a priming event whose id no GET can resume.
//   - A closed 2026-07-28 response stream does not cancel the tool with the
//     SDK's default options (PropagateRequestCancellation off): the handler's
//     context outlives the POST, the charge lands, and its result goes
//     nowhere. The host watches the call's connection (sdkserver.Front) and
//     records that result dropped (stream_closed); it runs a 2026-07-28 call
//     under the handler's context, so a cancellation the SDK did deliver would
//     reach the tool (ServerConfig.OnCancel).
//
// Ledger lifecycle: session_opened when initialize succeeds (a receiving
// middleware sees the client's name and the negotiated version),
// session_closed when ServerSession.Wait returns, with reason "deleted"
// after a DELETE, "expired" after /control/expire or the idle timeout,
// "shutdown" after Close. A session whose initialize failed is not recorded.
// Tools cannot see the SDK's event ids (event_id 0) nor whether a result
// reached a stream: result_written means handed to the SDK. The JSON-RPC
// request id reaches the tool through sdkserver.Front. /control/expire
// closes the session through the SDK; /control/terminate answers 501: the
// SDK has no session-terminating close event.
//
// # Client
//
//   - A stream that breaks (reset, EOF, timeout) is resumed by GET with
//     Last-Event-ID only if an event id was read on it; otherwise the call
//     fails at once ("request terminated without response"), and a POST that
//     breaks before its response headers fails with "rejected by transport".
//     Either way the adapter records unknown: the request had been sent.
//   - The reconnect waits the server's retry field if that stream carried one,
//     else 1 s × 1.5^(n−1), capped at 30 s, plus full jitter (1–2 s for the
//     first). The delays are not configurable (the SDK keeps them unexported):
//     only workload.Backoff.Retries maps, onto MaxRetries (0 keeps the SDK
//     default of 5, negative disables), which bounds attempts that fail to
//     connect and reconnects that make no progress.
//   - Any HTTP status other than 2xx on the reconnect ends the whole session,
//     transient ones included: 503 ("Service Unavailable"), 400 (an evicted
//     id on go-sdk servers), 410, and 404, which is ErrSessionMissing (then no
//     DELETE is sent on close). Pending calls fail; the SDK never
//     re-initializes. The adapter records the call unknown, and gives the
//     next call a new session (session_lost "status_404" or "abandoned").
//   - The standalone GET stream is opened after initialize; if it cannot be
//     reconnected within MaxRetries the session fails too.
//   - Last-Event-ID lives in memory only (workload.Options.Cursor is not
//     applicable), and the SDK never reports a gap.
//   - The SDK's default protocol version, 2026-07-28, has no sessions and no
//     resumption; the adapter asks for workload.Options.Protocol, else
//     2025-11-25. At 2026-07-28 the SDK connects with server/discover (the
//     session has no id; history session_new has none either), and a call
//     whose stream breaks is neither resumed nor issued again: it fails at
//     once and the adapter records it unknown. The next call goes out on the
//     same client.
//
// The adapter reports stream_break, reconnect and resume by observing the
// SDK's HTTP traffic (sdkclient.Tracker), not from SDK callbacks: the SDK
// exposes none. workload.Options.ReadTimeout is not applied: the SDK has no
// idle-read timeout.
package gosdk

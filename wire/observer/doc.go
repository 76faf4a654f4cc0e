// Package observer is the wire observer: the tap at both edges of the fault
// proxy and its HTTP/SSE/JSON-RPC parser. It records what crosses the two
// edges, in the record format of package wire, from inside the proxy's own
// byte path, without changing, reordering or dropping a byte of its own
// accord. It knows no fault and no target: the proxy agent (package
// faults/proxy) gives it Toxiproxy's links as its relay, and the tests that
// run it behind Toxiproxy (a whole MCP session, BenchmarkObserver) live
// there.
//
//	client ──▶ [edge client: the client's socket] ── relay (the fault proxy) ──▶ [edge server: the server's socket] ──▶ server
//
// A [Tap] is the fault proxy's front: it accepts the clients' connections
// on its listener ([Start]), dials Config.Upstream (the server) for each,
// and hands the two sockets, as one [Conn], to a [Relay] that carries the
// bytes between them: in the proxy agent, the Toxiproxy proxy's toxic links
// (package faults/proxy), so the faults act between the two edges and no
// extra socket or hop is added. The client edge is the client's socket:
// what the client sent and what was delivered to it; the server edge is
// the server's: what reached the server and what it sent. Both edges
// number the connection alike. The sink ([Sink]) writes wire.jsonl (a
// wire.Writer) and feeds whatever watches the records (a trigger).
// [Tap.Close] stops the tap and returns once its last record has been
// handed to the sink.
//
// [Tap.Refuse] closes the tap's listener, so that new connections to its
// address are refused as by a disabled proxy (partition {mode: refuse}),
// and leaves the open connections alone; [Tap.Accept] listens on the same
// address again. [Tap.Conns] lists the connections open now, which the
// fault proxy may end itself: [Conn.Reset] resets both sockets at once (a
// reset fault), [Conn.Close] closes both as a disabled proxy does.
//
// # Reading and writing
//
// Each socket has a reader of its own: it reads what the peer sends as
// soon as it arrives, queues a copy for the relay (which takes it with
// [Socket.Read] or [Socket.WriteTo]) and then parses it, so that what a
// peer sent is recorded when it reached the proxy, however long a fault
// holds it back from the other side (a stalled toxic), and parsing never
// delays the bytes. Past maxQueued bytes not yet taken by the relay the
// reader stops reading, and TCP holds the peer back. What the relay
// writes to a socket ([Socket.Write]) is written, and a copy, stamped
// with the instant before the write, is queued for a goroutine that
// parses that direction (one runs while there is something to parse), so
// the relay's next write never waits for a parse or the sink's call; past
// maxQueued bytes not parsed yet the write waits, so a sink that cannot
// keep up holds the relay back and memory stays bounded.
//
// How each side ends its part of a connection is the relay's to pass on
// (Toxiproxy closes both sockets when either direction ends, with an RST
// once a reset_peer toxic was installed: see faults/toxics). Each socket
// records how it ended:
//
//   - EOF from the peer is a FIN by the peer's side; a reset (ECONNRESET,
//     EPIPE on a write), a timeout or any other error ends the socket: it
//     is closed, and later writes to it are dropped;
//   - Close by the relay (or the proxy) is a FIN by the proxy's side, an
//     RST after [Conn.ResetOnClose] (or [Conn.Reset]); [Socket.CloseWrite]
//     passes a half-close on;
//   - a dial that fails (refused, unreachable, timed out after 10 s)
//     resets the client's socket, the nearest a proxy comes to a refused
//     connect, and nothing is recorded at the server edge: nothing reached
//     the server;
//   - [Tap.Close] closes both sockets of every open connection.
//
// A write to a socket that is gone reports success and passes nothing, so
// a relay drains what it holds instead of blocking on it (Toxiproxy's
// toxics would stay blocked on a chunk nobody reads, and removing them
// would hang its API: Shopify/toxiproxy#558).
//
// # Records
//
// Every record carries t_us (Config.Clock), the edge, and conn, the
// connection's number from 1, the same at both edges. A socket gives:
//
//   - open when the tap accepted it (the client edge) or dialled it (the
//     server edge); peer: the client side's address (the client's, or the
//     proxy's end of the dialled socket);
//   - request when a request's body has passed in full (at once for a
//     request without a body);
//   - response when a response's header has passed, for an SSE stream
//     (Content-Type text/event-stream), or when its body has passed, for
//     any other; informational (1xx) responses are passed and not recorded,
//     save 101;
//   - event as each SSE event passes (at the empty line that ends it),
//     comment for each comment line, and body_end when a stream's body ends
//     by its framing (its last chunk, or its Content-Length);
//   - malformed for what the tap could not read (below);
//   - close once both directions of the socket are done: end (fin, rst,
//     timeout, error, or observer when Close ended it), by (the side that
//     ended first; empty for observer), the bytes passed each way, and
//     detail (the error of an error or a failed dial, and "then rst by
//     server" when the other direction ended differently than by a FIN).
//
// What a parser records of a chunk carries the instant the chunk was read
// from the peer, or, for one written to it, the instant before it was
// written: no record of bytes is later than their reader's receipt of
// them, however loaded the machine.
//
// Records of one direction reach the sink in the order of its bytes. At
// each edge the n-th final response on a connection answers its n-th
// request (x = n). A response is recorded after the request it answers,
// unless the server answered before that request had passed in full: when
// a response's header arrives while the request direction holds a chunk it
// has not parsed yet, the response direction waits for that parse (at
// most 10 ms).
//
// # HTTP/1.x
//
// A direction is read as a sequence of HTTP/1.x messages. Header names are
// matched case-insensitively; of a header given twice the first value is
// kept (wire.Header). A request's body is delimited by chunked transfer
// coding or Content-Length, and is empty without either (a GET, a DELETE).
// A response has no body for HEAD, 204 and 304, a chunked or Content-Length
// body otherwise, or a body that runs to the connection's end. Record sizes
// count a body's content (chunk framing excluded).
//
// A request body is read as JSON-RPC, and so is a response body with a JSON
// media type (application/json); a response of status 400 or more keeps up
// to wire.MaxErrorBody of its body in error_body. An SSE body is read as
// the event stream format of the HTML standard: lines end in CRLF, LF or
// CR; an event is dispatched by an empty line, and recorded if it had an
// id, event, retry or data field; its data is read as one JSON-RPC message
// when the event type is absent or "message"; priming is an id and no
// data.
//
// # JSON-RPC
//
// A body is read with mcp.ParseBody (one message, or a 2025-03-26
// batch; a batch with an unreadable element keeps the others), an event's
// data with mcp.ParseMessage, after a fast path that reads the common
// messages of a stream (progress notifications, results, errors) in one
// pass and defers to package mcp for anything else, held to the same result by
// FuzzMessages. What a wire.Message keeps is listed in its documentation;
// tools/call arguments are digested by wire.ArgsDigest. A message that is
// not JSON-RPC, or whose fields have the wrong types, is kept with a
// problem.
//
// # What is not understood
//
// Bytes that are not HTTP/1.x (a TLS hello, an HTTP/2 preface, text),
// a header section over [MaxHeaderBytes], a bad Content-Length or chunk
// framing, the new protocol after a 101 or a CONNECT tunnel, and a message
// or an SSE event cut by the end of the connection are recorded as
// malformed: problem says what, size counts the bytes of the unit (the
// message or event) that were read up to where the tap gave up. That
// direction is then not parsed any further, but its bytes keep passing
// (the close record counts them). A body or event data over
// [MaxBodyBytes] is counted, passed on and recorded with a problem instead
// of messages.
//
// # Bounds
//
// A tap never panics on its input (FuzzRequestStream, FuzzResponseStream,
// FuzzMessages). Should a parser panic all the same, or the sink, only the
// recording of that direction stops: a malformed record says "observer
// failed", the log has the stack, and the bytes keep passing. A tap keeps
// per socket at most: a 32 KiB read buffer; maxQueued (1 MiB) of bytes
// read and not yet taken by the relay, each chunk in a buffer of about its
// size; and per direction one header line (at most [MaxHeaderBytes]); a
// body or one event's data up to [MaxBodyBytes], and only when it is read
// as JSON-RPC or kept as an error body (a larger one is counted, not kept:
// a 10 MB event costs no more than a 4 MiB one); one SSE id, event or
// retry value (1 KiB); and the methods of up to 64 HEAD or CONNECT
// requests awaiting their answer. Buffers that grew past 64 KiB are
// released once their message is recorded.
package observer

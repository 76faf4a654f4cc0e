// Package observer is the wire observer: a TCP relay (a tap) that sits at
// one edge of the fault proxy and records what crosses it, in the record
// format of package sideeffects/wire, without changing, reordering or
// holding back a byte.
//
//	client ──▶ [tap, edge client] ──▶ fault proxy ──▶ [tap, edge server] ──▶ server
//
// The proxy agent starts one tap per edge ([Start]), points the fault
// proxy's upstream at the server-edge tap and the client at the client-edge
// tap, and gives both a [Sink] that writes wire.jsonl (a wire.Writer) and
// feeds whatever watches the records (a trigger). [Tap.Close] stops a tap
// and returns once its last record has been handed to the sink.
//
// [Tap.Refuse] closes a tap's listener, so that new connections to its
// address are refused as by a disabled proxy (partition {mode: refuse} at
// the client edge, where the client connects to the tap), and leaves the
// open connections to the fault proxy; [Tap.Accept] listens on the same
// address again.
//
// # Relaying
//
// For each connection it accepts (the client side, wire.SideClient), a tap
// dials Config.Upstream (the server side, wire.SideServer) and copies both
// directions, each on its own goroutine. Each chunk read from one side is
// written to the other at once and only then parsed, so recording delays
// the traffic by no more than the parse of one chunk, and the sink's call,
// before the next read of that direction.
//
// A tap mirrors how each side ends its part of the connection, because
// clients tell these apart (see faults/toxics: FIN or RST):
//
//   - EOF (a FIN) from one side becomes CloseWrite on the other: a FIN,
//     while the other direction keeps flowing (a half-close);
//   - a reset (ECONNRESET, EPIPE) from one side becomes a reset of the
//     other (SO_LINGER 0, then close), and so does a timeout or any other
//     read error: the connection is dead;
//   - a write that fails (the receiving side reset) resets the side being
//     read;
//   - an upstream dial that fails (refused, unreachable, timed out after
//     10 s) resets the accepted connection, the nearest a relay comes to a
//     refused connect;
//   - [Tap.Close] closes both sides of every open connection.
//
// # Records
//
// Every record carries t_us (Config.Clock), the edge, and conn, the
// connection's number on this tap from 1. A connection gives:
//
//   - open when it is accepted (peer: the client side's address);
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
//   - close once both directions are done: end (fin, rst, timeout, error,
//     or observer when Close ended it), by (the side that ended first; empty
//     for observer), the bytes passed each way, and detail (the error of an
//     error or a failed dial, and "then rst by server" when the other
//     direction ended differently than by a FIN).
//
// Records of one direction reach the sink in the order of its bytes. A
// request's records come from the client-to-server goroutine, a response's
// from the other: the n-th final response on a connection answers its n-th
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
// A body is read with mcpwire.ParseBody (one message, or a 2025-03-26
// batch; a batch with an unreadable element keeps the others), an event's
// data with mcpwire.ParseMessage, after a fast path that reads the common
// messages of a stream (progress notifications, results, errors) in one
// pass and defers to mcpwire for anything else, held to the same result by
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
// per connection direction at most: a 32 KiB read
// buffer; one header line (at most [MaxHeaderBytes]); a body or one event's
// data up to [MaxBodyBytes], and only when it is read as JSON-RPC or kept
// as an error body (a larger one is counted, not kept: a 10 MB event costs
// no more than a 4 MiB one); one SSE id, event or retry value (1 KiB); and
// the methods of up to 64 HEAD or CONNECT requests awaiting their answer.
// Buffers that grew past 64 KiB are released once their message is
// recorded.
package observer

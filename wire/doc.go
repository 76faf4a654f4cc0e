// Package wire is the home of what crosses the wire, and its record format:
// what crossed each edge of an experiment's fault proxy, one JSON object per
// line in wire.jsonl, timed on the run's base clock (see internal/runclock).
//
// Its packages sit below the faults and the targets, which put traffic on
// the wire, and import nothing of chaosrun but internal:
//
//	wire           the record format: encoding, decoding, reading and writing
//	               files, digests, shares and their merge; and [Exchanges],
//	               the one pairing of an edge's records into HTTP exchanges
//	wire/observer  the tap at both edges of the fault proxy and its
//	               HTTP/SSE/JSON-RPC parser, which fill the records
//	wire/mcp       MCP's vocabulary: headers, versions, JSON-RPC messages,
//	               SSE framing, the tools' shapes
//
// The observer (package wire/observer) records two edges, inside the
// fault proxy's process, at the sockets it accepts from clients and dials
// to the server:
//
//	client ──▶ [edge client] ──▶ fault proxy ──▶ [edge server] ──▶ server
//
// What passes the client edge is what the client sent and what was delivered
// to it; what passes the server edge is what reached the server and what the
// server sent. A fault acts between the two, so comparing them shows what the
// fault did, and either one alone judges an implementation that writes no
// records of its own: a team's own server or client, in any language.
//
// This package defines the format, reads and writes it, and pairs its
// records into exchanges; the observer fills it, the trigger engine
// (faults/trigger) watches it as it is written, and the checker
// (harness/check) joins it with the ledger and the client histories. Both
// of those follow exchanges with [Exchanges] and keep what they need of
// each beside it.
//
// # Format
//
// Every line is a [Record]. Common fields: n (the record's number, from 1:
// the line's number when one proxy agent wrote the file), t_us
// (microseconds since the run's base), edge (client or server), conn (the
// connection's number, from 1: one connection through the proxy has the
// same number at both edges) and kind. When several proxy
// agents each carry a share of the clients, share i of k numbers its
// records and connections i, i+k, i+2k... and [Merge] makes their files
// one, ordered by t_us: numbers stay unique, and increase within each
// share. Which other fields
// a kind fills:
//
//	open      peer (the remote address of the accepted connection)
//	request   x, method, path, header, size, messages (the JSON-RPC body), problem
//	response  x, status, header (content_type and the MCP headers), size and
//	          messages for a body that is not a stream, error_body for a
//	          status of 400 or more, problem
//	event     x, event_id, event_type, retry_ms, priming, size, messages (one,
//	          for an event whose type is absent or "message"), problem
//	comment   x, size (an SSE comment line, such as a keepalive: its bytes
//	          from the colon, without the line's end)
//	body_end  x, size (a streamed response body ended by its framing: its
//	          final chunk, or its Content-Length)
//	close     end (fin | rst | timeout | error | observer), by (client |
//	          server; empty for observer), bytes_up, bytes_down, detail
//	malformed x, problem, size (bytes the observer could not read as HTTP/1.x
//	          or SSE; they were passed on unchanged)
//
// x numbers the requests of one connection from 1; a response, its events and
// its end carry the number of the request they answer, so (edge, conn, x)
// names one HTTP exchange ([ExchangeKey]). A request is recorded once its
// body has passed in full; a response once its header has, or, for a body
// that is not an SSE stream, once that body has too. Informational (1xx) responses other than
// 101 are not recorded. The observer never holds bytes back to record them: a
// record is written after the bytes it describes were passed on.
//
// Sizes count content: a body's bytes without chunk framing, an event's data
// (its data lines joined by newlines). A malformed record's size counts the
// bytes of the message or event that could not be read, from its start to
// the byte where the observer gave up (or to the connection's end, for one
// cut short); the observer reads nothing more of that direction, and the
// close record's byte counts include what followed. A request or response
// whose body the connection's end cut short, or whose body was too large to
// read as JSON-RPC, is recorded with a problem and without messages, and so
// is an event whose data was too large.
//
// A close record's end and by say how the side that ended first ended its
// part (a FIN, an RST, a timeout, another error; observer when the observer
// itself closed the connection on stopping); detail holds an error's text,
// "dial: ..." when the upstream could not be reached (by server), and "then
// rst by client" (say) when the other direction ended otherwise than by a
// FIN.
//
// A message carries what the checker needs of one JSON-RPC message: its id
// (canonical text: a number's digits, a string's contents; empty for null),
// method, the tool name and arguments of a tools/call (arguments over
// [MaxArgsBytes] keep only their digest, which is that of their canonical
// form, so the same arguments spelt differently share it), the client's
// name and protocol version (from initialize, or from the per-request _meta
// of 2026-07-28), progress numbers, the request id of
// notifications/cancelled, error codes, and the task id and status of a
// tasks answer (or the task a message relates to). What the observer cannot read as JSON-RPC is a
// message with a problem, never a rejected byte.
package wire

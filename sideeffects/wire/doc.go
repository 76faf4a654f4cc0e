// Package wire is the record format of the wire observer: what crossed each
// edge of an experiment's fault proxy, one JSON object per line in
// wire.jsonl, timed on the run's base clock (see internal/runclock).
//
// The observer (package faults/observer) sits at two edges:
//
//	client ──▶ [edge client] ──▶ fault proxy ──▶ [edge server] ──▶ server
//
// What passes the client edge is what the client sent and what was delivered
// to it; what passes the server edge is what reached the server and what the
// server sent. A fault acts between the two, so comparing them shows what the
// fault did, and either one alone judges an implementation that writes no
// records of its own: a team's own server or client, in any language.
//
// This package only defines the format and reads and writes it; the
// observer fills it and the checker (harness/check) joins it with the ledger
// and the client histories. It imports nothing else from chaosrun.
//
// # Format
//
// Every line is a [Record]. Common fields: n (the line's number, from 1),
// t_us (microseconds since the run's base), edge (client or server), conn
// (the connection's number on its edge, from 1) and kind. Which other fields
// a kind fills:
//
//	open      peer (the remote address of the accepted connection)
//	request   x, method, path, header, size, messages (the JSON-RPC body), problem
//	response  x, status, header (content_type and the MCP headers), size and
//	          messages for a body that is not a stream, error_body for a
//	          status of 400 or more
//	event     x, event_id, event_type, retry_ms, priming, size, messages (one)
//	comment   x, size (an SSE comment line, such as a keepalive)
//	body_end  x, size (a streamed response body ended on its final chunk)
//	close     end (fin | rst | timeout | error | observer), by (client |
//	          server), bytes_up, bytes_down, detail
//	malformed x, problem, size (bytes the observer could not read as HTTP/1.x
//	          or SSE; they were passed on unchanged)
//
// x numbers the requests of one connection from 1; a response, its events and
// its end carry the number of the request they answer, so (edge, conn, x)
// names one HTTP exchange. A request is recorded once its body has passed in
// full; a response once its header has, or, for a body that is not an SSE
// stream, once that body has too. The observer never holds bytes back to
// record them: a record is written after the bytes it describes were passed
// on.
//
// A message carries what the checker needs of one JSON-RPC message: its id
// (canonical text: a number's digits, a string's contents), method, the tool
// name and arguments of a tools/call (arguments over [MaxArgsBytes] keep only
// their digest), the client's name and protocol version (from initialize, or
// from the per-request _meta of 2026-07-28), progress numbers, the
// request id of notifications/cancelled, error codes, and the task id and
// status of a tasks answer. What the observer cannot read as JSON-RPC is a
// message with a problem, never a rejected byte.
package wire

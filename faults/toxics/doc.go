// Package toxics holds chaosrun's own Toxiproxy toxics: the faults a load
// balancer or a network causes that Toxiproxy's built-in toxics cannot.
// [Register] adds them to Toxiproxy's toxic registry under the type names
// below; the proxy agent calls it before it serves the Toxiproxy API.
//
// Every toxic follows Toxiproxy's contract (CREATING_TOXICS.md): Pipe
// returns promptly on an interrupt after passing on any chunk it holds, and
// a nil chunk on Input (end of stream) closes the stub. Parameters are the
// exported fields of each toxic, with JSON tags: the struct is the wire
// schema of the toxic's "attributes". Durations on the wire are whole
// milliseconds, as in Toxiproxy's own toxics.
//
// # The toxics
//
//   - idle_timeout {idle} (downstream): closes the connection once `idle`
//     has passed with no byte from the server to the client — the read
//     timeout of a load balancer (nginx proxy_read_timeout). The timer
//     starts when the toxic starts on the connection (its opening, or the
//     toxic's installation for a connection already open) and restarts on
//     every downstream chunk. Removing the toxic before it fires leaves the
//     connection untouched.
//   - cut {after} (either stream): closes the connection `after` after the
//     toxic starts on it, whether or not bytes flow. Toxiproxy's reset_peer
//     waits for the connection's next chunk, which an idle SSE stream may
//     not carry for minutes; cut acts on a timer.
//   - stall {} (either stream): stops reading its input. The connection
//     stays open, the sender is throttled by TCP back-pressure, and
//     removing the toxic lets every held byte through: a blackhole that
//     heals without loss (Toxiproxy's timeout toxic closes the connection
//     when it is removed).
//   - http_status_gate {count} (upstream) and http_status {status}
//     (downstream): together they answer new HTTP requests the way a load
//     balancer with no healthy backend does, without the request reaching
//     the server. See "Answering HTTP requests" below.
//
// # FIN or RST
//
// Every toxic here ends a connection by closing its stub; Toxiproxy then
// closes both TCP connections of the link. Whether that close is a FIN or
// an RST is decided when the connection is opened, not by the toxic:
// Toxiproxy sets SO_LINGER 0 on both sockets of a new connection when the
// chain of either direction contains its reset_peer toxic ([ResetPeer]),
// whatever that toxic's toxicity. A reset_peer with toxicity 0 runs as a
// no-op, so installing one turns every later close of the connections
// opened while it was installed into an RST, and nothing else. Connections
// already open keep their linger: for them a close is a FIN. The fault
// catalogue (package faults) installs such a reset_peer when a run asks for
// resets; by hand, add {"type":"reset_peer","toxicity":0} before the
// clients connect. The proxy agent (package faults/proxy) accepts its
// observed proxy's connections itself, and gives them linger 0 on the
// same rule: a reset_peer in either chain when the connection opens.
//
// A Go HTTP client reading a chunked SSE body sees the two closes
// differently: after a FIN the body read returns io.ErrUnexpectedEOF; after
// an RST it returns an error that matches syscall.ECONNRESET
// ("connection reset by peer").
//
// # Answering HTTP requests
//
// Toxics see one direction of one connection each, so the answer is split
// in two halves that meet through the connection itself:
//
//   - The gate (upstream) looks at the first chunk it sees on each
//     connection. If that chunk begins an HTTP/1.x request line ("POST ",
//     "GET ", ...) and the gate's budget allows (count 0 means every
//     request; otherwise count requests in all, across connections), it
//     drops the chunk and everything after it and closes the upstream half:
//     the server sees a connection close without a byte. Otherwise the
//     connection passes through untouched for as long as the gate is
//     installed: the gate decides once per connection.
//   - The answer half (downstream) passes the server's bytes on. When its
//     stream ends before the server sent any byte since the toxic started on
//     the connection, it writes a complete response — the status line, a
//     small JSON body {"error":"service_unavailable","status":503},
//     Content-Length and Connection: close — and closes.
//
// Limits of the contract: the request line must start the first chunk of
// the connection as the gate sees it, so TLS, HTTP/2 and requests split
// oddly by the sender pass through; a keep-alive connection that carried
// server bytes after the toxics were installed and then sends a new request
// is closed without an answer (Go's Transport retries a replayable request
// on a fresh connection, which is answered); and a connection the server
// closes before sending anything is answered too, as a load balancer
// answers a backend that hung up without a response. Install the answer
// half before the gate and remove the gate first, so no swallowed request
// goes unanswered.
package toxics

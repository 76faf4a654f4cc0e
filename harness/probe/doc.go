// Package probe is `chaosrun probe`: a fixed battery of generated
// experiments that measures, for one server or one client, the four
// conditions on which "a disconnect is not a termination" rests (the
// incident record's): a durable cursor, retention that outlives the worst
// reconnect, an explicit answer to a cursor that cannot be honoured, and a
// client that tells failure classes apart.
//
// For a server, per protocol revision it offers: the retention window in
// events (a search over how many of a call's events are missed before the
// client comes back) and in time (a search over how long it stays away);
// the answer to an evicted Last-Event-ID and to one never issued; the idle
// session TTL and the answer after it; resumption (event ids, a priming
// event, retry, ids naming one event, an exact replay); whether a closed
// response stream cancels a call (2026-07-28: it must; session revisions:
// it must not) and whether the result waits for a resume; and whether a
// re-issued call executes twice. For a client, against chaosrun's
// reference server: a cursor kept across its own restart, resume after a
// reset and after 5xx, 404 handled without a blind retry, 410 surfaced as
// a gap, a close event obeyed, and its blind retries counted.
//
// Every experiment is generated, run and saved by package lab, so it is
// an ordinary experiment `chaosrun report` judges again. Every figure is
// read from what a run recorded: the wire at the server edge for what the
// server answered and when, the client edge for what a client did, the
// fault log for when a cut began, the ledger (where the server keeps one)
// for what a tool did after its stream closed, and the verdict's figures
// for blind retries. Where the records cannot tell (a server with no
// ledger that may or may not have run a call on after its stream closed,
// a client of the user's own that may or may not have told its caller of
// a gap), the check says cannot tell, and why. A report is written as
// probe.md, probe.json and checks.json, the MCP conformance suite's shape,
// and held against a baseline of expected failures in that suite's format.
package probe

// Package sdkclient records the history of a logical client driven through
// a real SDK's own client (targets/gosdk and targets/mcpgo), so that both
// SDK clients write the same history as chaosrun's own clients and the
// checker judges them alike.
//
// A [Tracker] writes the history of one logical client. Its
// [Tracker.Transport] is an http.RoundTripper put under the SDK's HTTP
// client: it sees every POST and GET the SDK makes and reads the bytes the
// SDK reads, and from them records what the SDK does not report itself:
// the invoke with its JSON-RPC request id, the event id of every progress
// notification, stream breaks, reconnects with Last-Event-ID and resumes.
// It never changes a request or a response. Outcomes are resolved from
// what was seen on the wire (see [Call.End]).
package sdkclient

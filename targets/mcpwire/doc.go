// Package mcpwire holds the wire pieces of MCP's Streamable HTTP transport that
// the reference server, the clients and the SDK adapters share: header names,
// protocol versions, JSON-RPC 2.0 messages, Server-Sent Events framing, and
// the argument and result shapes of the two tools every target exposes
// (charge and chatty).
//
// It imports nothing else from chaosrun.
package mcpwire

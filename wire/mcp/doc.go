// Package mcp holds the wire pieces of MCP's Streamable HTTP transport that
// the reference server, the clients, the SDK adapters, the observer and the
// checker share: header names, protocol versions, JSON-RPC 2.0 messages,
// Server-Sent Events framing, and the argument and result shapes of the two
// tools every target exposes (charge and chatty).
//
// It imports nothing else from chaosrun, so every part may speak it. A
// package that also imports an SDK's own package named mcp imports this one
// as mcpwire.
package mcp

package mcp

import (
	"slices"
	"strings"
)

// Header names of the Streamable HTTP transport.
const (
	HeaderSessionID       = "Mcp-Session-Id"
	HeaderProtocolVersion = "MCP-Protocol-Version"
	HeaderLastEventID     = "Last-Event-ID"
)

// Media types.
const (
	ContentTypeJSON = "application/json"
	ContentTypeSSE  = "text/event-stream"
)

// HasMediaType reports whether a Content-Type value names media type mt:
// its part before any parameter, without spaces, compared as HTTP compares
// media types, in any case. It allocates nothing.
func HasMediaType(contentType, mt string) bool {
	v, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(v), mt)
}

// Protocol versions of the Streamable HTTP transport.
const (
	Version20250326 = "2025-03-26"
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"

	// LatestVersion is the newest version with sessions and resumption.
	LatestVersion = Version20251125
)

// Versions lists the supported protocol versions, oldest first.
var Versions = []string{Version20250326, Version20250618, Version20251125}

// SupportedVersion reports whether v is one of [Versions].
func SupportedVersion(v string) bool { return slices.Contains(Versions, v) }

// Method names used by the targets.
const (
	MethodInitialize  = "initialize"
	MethodInitialized = "notifications/initialized"
	MethodPing        = "ping"
	MethodToolsList   = "tools/list"
	MethodToolsCall   = "tools/call"
	MethodProgress    = "notifications/progress"
	MethodCancelled   = "notifications/cancelled"
	// MethodDiscover is how a 2026-07-28 client learns what a server
	// speaks, in place of the initialize handshake.
	MethodDiscover = "server/discover"
)

// EventClose is the SSE event type the reference server sends when it ends
// a session on purpose: a client that sees it stops reconnecting.
const EventClose = "close"

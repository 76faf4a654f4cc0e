package mcpgo

import (
	"slices"

	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/sdkserver"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ServerOptions are the mcp-go server's settings (retention_events,
// session_ttl): see ServerConfig for how they reach the SDK.
type ServerOptions = sdkserver.Options

// ClientOptions are the mcp-go client's settings (backoff.retries).
type ClientOptions = sdkclient.Options

// ServerConfigOf returns a ServerConfig holding o, for the caller to add
// the rest.
func ServerConfigOf(o *ServerOptions) ServerConfig {
	return ServerConfig{RetentionEvents: o.RetentionEvents, SessionTTL: o.SessionTTL.D()}
}

// unspoken is why the mcp-go adapters stay at the session revisions: the
// SDK has the revision, the adapters do not drive it.
const unspoken = "mcp-go v1.2.1 itself has 2026-07-28 (client.WithProtocolVersion and server/discover in its client, " +
	"a stateless handler in its server), but chaosrun's mcp-go adapters drive it at the session revisions only"

// The mcp-go adapters as targets: the session revisions only; the server
// runs the SDK's own 2025-11-25 tasks.
var (
	ServerDescriptor = targets.Server{
		Name:      Target,
		Options:   func() targets.Options { return sdkserver.DefaultOptions() },
		Protocols: slices.Clone(mcp.Versions),
		Unspoken:  unspoken,
		TaskModes: []string{TasksLegacy},
		Tools:     []string{mcp.ToolCharge, mcp.ToolChatty},
		Controls:  []string{"expire", "terminate"},
	}
	ClientDescriptor = targets.Client{
		Name:      Target,
		Options:   func() targets.Options { return sdkclient.DefaultOptions() },
		Protocols: slices.Clone(mcp.Versions),
		Unspoken:  unspoken,
		Records:   history.File,
	}
)

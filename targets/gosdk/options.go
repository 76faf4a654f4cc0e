package gosdk

import (
	"slices"

	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/sdkserver"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ServerOptions are the go-sdk server's settings (retention_events,
// session_ttl): see ServerConfig for how they reach the SDK.
type ServerOptions = sdkserver.Options

// ClientOptions are the go-sdk client's settings (backoff.retries).
type ClientOptions = sdkclient.Options

// ServerConfigOf returns a ServerConfig holding o, for the caller to add
// the rest.
func ServerConfigOf(o *ServerOptions) ServerConfig {
	return ServerConfig{RetentionEvents: o.RetentionEvents, SessionTTL: o.SessionTTL.D()}
}

// The go-sdk adapters as targets. Both speak every revision: the client
// through ClientSessionOptions.ProtocolVersion, the server stateless at
// 2026-07-28 (ServerConfig.Stateless). The server's control endpoint
// expires sessions; it answers terminate with 501 (no close event in the
// SDK).
var (
	ServerDescriptor = targets.Server{
		Name:      Target,
		Options:   func() targets.Options { return sdkserver.DefaultOptions() },
		Protocols: protocols(),
		Tools:     []string{mcp.ToolCharge, mcp.ToolChatty},
		Controls:  []string{"expire", "terminate"},
	}
	ClientDescriptor = targets.Client{
		Name:      Target,
		Options:   func() targets.Options { return sdkclient.DefaultOptions() },
		Protocols: protocols(),
		Records:   history.File,
	}
)

func protocols() []string { return append(slices.Clone(mcp.Versions), mcp.Version20260728) }

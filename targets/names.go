package targets

// Server targets.
const (
	// Reference is chaosrun's own server (targets/server).
	Reference = "reference"
	// Command is a bring-your-own server command, started by the server
	// agent (targets/byo).
	Command = "command"
	// Image is a bring-your-own server image, run by the docker runtime in
	// the server agent's place (targets/byo).
	Image = "image"
)

// Client targets.
const (
	// Resumable is the client of the seed's decision procedure, with a
	// durable cursor (targets/client).
	Resumable = "resumable"
	// Naive is the incident's client (targets/client).
	Naive = "naive"
)

// SDK targets, each both a server and a client.
const (
	// GoSDK is the official MCP Go SDK (targets/gosdk).
	GoSDK = "go-sdk"
	// MCPGo is mark3labs/mcp-go (targets/mcpgo).
	MCPGo = "mcp-go"
)

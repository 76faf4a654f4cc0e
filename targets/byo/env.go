package byo

import (
	"fmt"
	"net"
	"strings"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// The environment of the contract, the one place its names are spelled.
const (
	// EnvListenAddr is host:port the server must listen on; its MCP
	// endpoint is /mcp there.
	EnvListenAddr = "CHAOSRUN_LISTEN_ADDR"
	// EnvLedgerURL is the ledger service: the server POSTs its records as
	// JSON to this URL's /records.
	EnvLedgerURL = "CHAOSRUN_LEDGER_URL"
	// EnvBase is the run's clock as decimal Unix nanoseconds: a record's
	// t_us is microseconds since this instant.
	EnvBase = "CHAOSRUN_BASE_UNIX_NANO"
	// EnvStateDir is a folder that survives restarts of the server.
	EnvStateDir = "CHAOSRUN_STATE_DIR"
)

// Env is the contract's environment for one server.
type Env struct {
	ListenAddr string
	LedgerURL  string
	// Clock is the run's base clock. A zero Clock leaves EnvBase empty,
	// and the server counts from its own start.
	Clock    runclock.Clock
	StateDir string
}

// Environ returns e as KEY=value pairs, in the order of the contract.
func (e Env) Environ() []string {
	base := ""
	if !e.Clock.Base().IsZero() {
		base = e.Clock.String()
	}
	return []string{
		EnvListenAddr + "=" + e.ListenAddr,
		EnvLedgerURL + "=" + e.LedgerURL,
		EnvBase + "=" + base,
		EnvStateDir + "=" + e.StateDir,
	}
}

// The placeholders a server command's arguments may hold, for servers that
// take their address as a flag rather than from [EnvListenAddr].
const (
	PlaceholderAddr = "{addr}" // host:port, as EnvListenAddr
	PlaceholderHost = "{host}" // the host alone
	PlaceholderPort = "{port}" // the port alone
)

// Expand returns args with every placeholder replaced by the part of
// e.ListenAddr it names; an argument may hold several, and text around
// them is kept ("--listen=http://{host}:{port}/"). args is not changed.
func (e Env) Expand(args []string) []string {
	host, port, err := net.SplitHostPort(e.ListenAddr)
	if err != nil {
		host, port = e.ListenAddr, ""
	}
	r := strings.NewReplacer(PlaceholderAddr, e.ListenAddr, PlaceholderHost, host, PlaceholderPort, port)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
	}
	return out
}

// EnvHelp describes the contract's environment for the server agent's
// help: one line per variable, its name and what it means, indented.
func EnvHelp() string {
	var b strings.Builder
	for _, v := range []struct{ name, meaning string }{
		{EnvListenAddr, "host:port the command must listen on (MCP endpoint: /mcp)"},
		{EnvLedgerURL, "the ledger: POST records as JSON to $" + EnvLedgerURL + "/records"},
		{EnvBase, "the run clock: a record's t_us is microseconds since this instant"},
		{EnvStateDir, "a folder that survives restarts of the server"},
	} {
		fmt.Fprintf(&b, "  %-24s %s\n", v.name, v.meaning)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

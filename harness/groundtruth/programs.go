package groundtruth

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Authors of the corpus's programs.
const (
	AuthorGoSDK    = "the official MCP Go SDK's authors (github.com/modelcontextprotocol/go-sdk v1.8.0)"
	AuthorMCPGo    = "mark3labs (github.com/mark3labs/mcp-go v1.2.1)"
	AuthorChaosrun = "this project"
)

// Roles a program plays in a run.
const (
	RoleServer = "server"
	RoleClient = "client"
)

// Program is one program of the corpus: where it comes from, who wrote it,
// what it plays and what its oracle reads. Each is built as it is, from its
// own package, with CGO_ENABLED=0 (the docker runtime copies it into a
// scratch image).
type Program struct {
	// Bin is its file name under the corpus's bin folder, as the
	// experiments' commands name it.
	Bin string
	// Package is the Go package built, from the module cache for the
	// programs nobody here wrote.
	Package string
	Author  string
	Roles   []string
	// Oracle says what the program's own record is and what it can and
	// cannot establish.
	Oracle string
	// Docker says whether it runs on the docker runtime too; Why says why
	// not, when it does not.
	Docker bool
	Why    string
}

// Programs are the corpus's programs, in the order of the README's table.
var Programs = []Program{
	{Bin: "gosdk-http", Package: "github.com/modelcontextprotocol/go-sdk/examples/http", Author: AuthorGoSDK,
		Roles: []string{RoleServer, RoleClient}, Docker: true,
		Oracle: "server: its logging middleware's [REQUEST]/[RESPONSE] line for every method with the session id and status " +
			"(executions, results written, sessions; not the arguments, so executions per operation only where the client never sends a call twice); " +
			"client: its printed result or failure for each city, and its fatal line"},
	{Bin: "gosdk-loadtest", Package: "github.com/modelcontextprotocol/go-sdk/examples/client/loadtest", Author: AuthorGoSDK,
		Roles: []string{RoleClient}, Docker: true,
		Oracle: "with -v, its SUCCESS and FAILURE line for every call and its closing counts; a call still in flight when its " +
			"-duration ends is not printed (so the calls made are a range: printed, up to one more per worker); its workers share one clientInfo.name"},
	{Bin: "gosdk-conformance-server", Package: "github.com/modelcontextprotocol/go-sdk/conformance/everything-server", Author: AuthorGoSDK,
		Roles: []string{RoleServer}, Docker: true,
		Oracle: "none of its own (it logs nothing per call): the client's record says what was received; test_tool_with_progress " +
			"sends progress 0, 50 and 100 of 100 by its source, so the events of a result read are known, not what an interrupted execution emitted"},
	{Bin: "mcpgo-everything", Package: "github.com/mark3labs/mcp-go/examples/everything", Author: AuthorMCPGo,
		Roles: []string{RoleServer}, Docker: false, Why: "it listens on the fixed :8080, which needs server.listen, a local-runtime setting",
		Oracle: "its hooks on stderr: beforeCallTool and afterCallTool (with the arguments and the result) and onError for every call, " +
			"afterInitialize for every session; a longRunningOperation that completed sent steps progress events by its source, less up to one " +
			"that mcp-go drops when the result races it out (so events sent are a range), notify one under token 0, no event of the call"},
	{Bin: "mcpgo-conformance-server", Package: "github.com/mark3labs/mcp-go/examples/conformance", Author: AuthorMCPGo,
		Roles: []string{RoleServer}, Docker: false, Why: "it listens on the fixed 127.0.0.1:3000, which needs server.listen, a local-runtime setting",
		Oracle: "none of its own (it logs nothing per call): the client's record says what was received; test_tool_with_progress " +
			"sends progress 0, 50 and 100 of 100 by its source"},
	{Bin: "mcpgo-simple-client", Package: "github.com/mark3labs/mcp-go/examples/simple_client", Author: AuthorMCPGo,
		Roles: []string{RoleClient}, Docker: true,
		Oracle: "its printed steps (initialize, ping, tools/list, resources/list) and its fatal line: it never calls a tool"},
	{Bin: "shop-gosdk", Package: "./examples/blackbox/shop-gosdk", Author: AuthorChaosrun,
		Roles: []string{RoleServer}, Docker: true,
		Oracle: "its stdout: a line per charge (order id) and, with --log-rows, a line per progress event sent (its row, progress and total)"},
	{Bin: "shop-mcpgo", Package: "./examples/blackbox/shop-mcpgo", Author: AuthorChaosrun,
		Roles: []string{RoleServer}, Docker: true,
		Oracle: "its stdout: a line per charge (order id)"},
	{Bin: "retry-client", Package: "./examples/blackbox/retry-client", Author: AuthorChaosrun,
		Roles: []string{RoleClient}, Docker: true,
		Oracle: "its stdout: a line per operation (ok, failed) and per retry on a fresh session"},
	{Bin: "byo-server", Package: "./examples/byo-server", Author: AuthorChaosrun,
		Roles: []string{RoleServer}, Docker: true,
		Oracle: "the ledger records it writes itself (ledger.jsonl), read by the test's own decoder; the verdict is judged without them"},
}

// ChaosrunTargets are chaosrun's own targets in the corpus, with their
// oracles (they are not built: the chaosrun binary runs them).
var ChaosrunTargets = []Program{
	{Bin: "reference", Author: AuthorChaosrun, Roles: []string{RoleServer}, Docker: true,
		Oracle: "its ledger (ledger.jsonl: every call started and finished, charge, event emitted, result written, session opened), " +
			"read by the test's own decoder; the verdict is judged without it"},
	{Bin: "naive, resumable, go-sdk, mcp-go", Author: AuthorChaosrun, Roles: []string{RoleClient}, Docker: true,
		Oracle: "its history (history.jsonl: every invoke, outcome, event received, stream break, session), " +
			"read by the test's own decoder; the verdict is judged without it"},
}

// program returns the corpus program whose binary is named bin.
func program(bin string) (Program, bool) {
	for _, p := range Programs {
		if p.Bin == bin {
			return p, true
		}
	}
	return Program{}, false
}

// Build builds chaosrun and every corpus program into dir (CGO_ENABLED=0,
// static), from the module whose root is moduleDir. It returns the path of
// the chaosrun binary.
func Build(ctx context.Context, moduleDir, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	chaosrun := filepath.Join(dir, "chaosrun")
	builds := [][2]string{{chaosrun, "./cmd/chaosrun"}}
	for _, p := range Programs {
		builds = append(builds, [2]string{filepath.Join(dir, p.Bin), p.Package})
	}
	for _, b := range builds {
		cmd := exec.CommandContext(ctx, "go", "build", "-o", b[0], b[1])
		cmd.Dir = moduleDir
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("build %s: %w\n%s", b[1], err, out.Bytes())
		}
	}
	return chaosrun, nil
}

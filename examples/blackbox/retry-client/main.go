// Command retry-client is an MCP client that knows nothing of chaosrun but
// the two environment variables of the bring-your-own client contract
// (docs/byo-targets.md): a team's own client, written with the official MCP
// Go SDK, put under test by chaosrun from the wire alone.
//
// It reads the operations file named by CHAOSRUN_OPERATIONS, connects to
// CHAOSRUN_MCP_URL once per logical client (clientInfo.name is the
// operation's client), and makes each call in order. What it does when a
// call fails is what an experiment examines:
//
//	--max-reconnects N  the SDK's own resumption of a broken stream
//	                    (StreamableClientTransport.MaxRetries; -1: none)
//	--retry-failed N    call again, on a fresh session, a call that failed,
//	                    up to N times: the "retry on error" wrapper teams add
//	--retry-unsafe      retry even an operation not marked idempotent (the
//	                    double charge); without it only idempotent ones are
//
// It prints one line per call and exits 1 if any call failed in the end.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// operations is the file CHAOSRUN_OPERATIONS names.
type operations struct {
	Operations []struct {
		Client     string          `json:"client"`
		Call       string          `json:"call"`
		Tool       string          `json:"tool"`
		Arguments  json.RawMessage `json:"arguments"`
		Idempotent bool            `json:"idempotent"`
	} `json:"operations"`
}

func main() {
	reconnects := flag.Int("max-reconnects", 5, "the SDK's reconnects of a broken stream (-1: none)")
	retries := flag.Int("retry-failed", 0, "times to call a failed call again, on a fresh session")
	unsafe := flag.Bool("retry-unsafe", false, "retry calls not marked idempotent too")
	timeout := flag.Duration("call-timeout", 2*time.Minute, "how long one call may take")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	url, path := os.Getenv("CHAOSRUN_MCP_URL"), os.Getenv("CHAOSRUN_OPERATIONS")
	if url == "" || path == "" {
		log.Fatal("retry-client: CHAOSRUN_MCP_URL and CHAOSRUN_OPERATIONS must be set")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		log.Fatalf("retry-client: %v", err)
	}
	var ops operations
	if err := json.Unmarshal(b, &ops); err != nil {
		log.Fatalf("retry-client: %s: %v", path, err)
	}
	c := &caller{url: url, reconnects: *reconnects, sessions: map[string]*mcp.ClientSession{}}
	defer c.close()
	failed := 0
	for _, op := range ops.Operations {
		var args map[string]any
		if err := json.Unmarshal(op.Arguments, &args); err != nil {
			log.Fatalf("retry-client: %s: arguments of %s: %v", path, op.Call, err)
		}
		err := c.call(ctx, op.Client, op.Tool, args, *timeout)
		for try := 0; err != nil && try < *retries && (op.Idempotent || *unsafe) && ctx.Err() == nil; try++ {
			fmt.Printf("%s %s: %v; calling again on a fresh session\n", op.Call, op.Tool, err)
			c.drop(op.Client)
			err = c.call(ctx, op.Client, op.Tool, args, *timeout)
		}
		if err != nil {
			failed++
			fmt.Printf("%s %s: failed: %v\n", op.Call, op.Tool, err)
			continue
		}
		fmt.Printf("%s %s: ok\n", op.Call, op.Tool)
	}
	if failed > 0 {
		c.close()
		os.Exit(1)
	}
}

// caller holds one session per logical client.
type caller struct {
	url        string
	reconnects int
	sessions   map[string]*mcp.ClientSession
}

func (c *caller) call(ctx context.Context, client, tool string, args map[string]any, timeout time.Duration) error {
	s := c.sessions[client]
	if s == nil {
		cl := mcp.NewClient(&mcp.Implementation{Name: client, Version: "1.0.0"}, nil)
		var err error
		s, err = cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: c.url, MaxRetries: c.reconnects, DisableStandaloneSSE: true}, nil)
		if err != nil {
			return fmt.Errorf("connect: %w", err)
		}
		c.sessions[client] = s
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("the tool reported an error")
	}
	return nil
}

// drop forgets a client's session without ending it: the server may still
// be running its call.
func (c *caller) drop(client string) { delete(c.sessions, client) }

func (c *caller) close() {
	for k, s := range c.sessions {
		_ = s.Close()
		delete(c.sessions, k)
	}
}

// Command shop-mcpgo is the shop of shop-gosdk written with mark3labs/mcp-go
// instead: an MCP server that knows nothing of chaosrun, put under test
// from the wire alone.
//
// Tools:
//
//	place_order {order_id, amount_cents}  calls the payment provider, which
//	                                      takes --work, then charges the order;
//	                                      not idempotent
//	export_rows {rows}                    one progress notification per row,
//	                                      one every --row-interval
//
// Flags: --addr (host:port to serve MCP on, at /mcp), --work,
// --row-interval and --keep-events. It is stateful with an in-memory event
// store, so a client can resume a broken stream with Last-Event-ID: the
// SDK's own (unbounded until the session ends), or with --keep-events N the
// shop's own bounded store (store.go), which keeps the newest N events of
// each stream the way a team bounds its memory, and replays what it still
// holds. Every charge is printed on stdout. On SIGTERM it shuts the SDK's server down, giving
// running tools up to 5 s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port to serve MCP on (endpoint /mcp)")
	work := flag.Duration("work", 4*time.Second, "how long the payment provider takes to charge")
	interval := flag.Duration("row-interval", 10*time.Millisecond, "pause between two exported rows")
	keep := flag.Int("keep-events", 0, "events kept per stream for resumption (0: the SDK's unbounded store)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var store server.EventStore = server.NewInMemoryEventStore()
	if *keep > 0 {
		store = newBoundedStore(*keep)
	}
	if err := serve(ctx, *addr, *work, *interval, store); err != nil {
		log.Fatalf("shop-mcpgo: %v", err)
	}
}

func serve(ctx context.Context, addr string, work, interval time.Duration, store server.EventStore) error {
	s := server.NewMCPServer("shop-mcpgo", "1.0.0", server.WithToolCapabilities(false))
	s.AddTool(mcp.NewTool("place_order", mcp.WithDescription("Charge an order through the payment provider"),
		mcp.WithString("order_id", mcp.Required()), mcp.WithNumber("amount_cents", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			id, err := req.RequireString("order_id")
			if err != nil {
				return mcp.NewToolResultError(err.Error()), nil
			}
			amount := req.GetInt("amount_cents", 0)
			if amount <= 0 {
				return mcp.NewToolResultError("amount_cents must be positive"), nil
			}
			// The provider's client takes no context: once asked, it charges.
			time.Sleep(work)
			fmt.Printf("charged order %s: %d cents\n", id, amount)
			return mcp.NewToolResultText(fmt.Sprintf("charged %s %d", id, amount)), nil
		})
	s.AddTool(mcp.NewTool("export_rows", mcp.WithDescription("Export rows, reporting progress per row"),
		mcp.WithNumber("rows", mcp.Required())),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			rows := req.GetInt("rows", 0)
			var token mcp.ProgressToken
			if req.Params.Meta != nil {
				token = req.Params.Meta.ProgressToken
			}
			for i := 1; i <= rows; i++ {
				time.Sleep(interval)
				if token == nil {
					continue
				}
				if err := s.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": i, "total": rows,
				}); err != nil {
					return nil, err
				}
			}
			return mcp.NewToolResultText(fmt.Sprintf("exported %d rows", rows)), nil
		})

	h := server.NewStreamableHTTPServer(s, server.WithStateful(true), server.WithEventStore(store))
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = h.Shutdown(drain)
	_ = srv.Shutdown(drain)
	return nil
}

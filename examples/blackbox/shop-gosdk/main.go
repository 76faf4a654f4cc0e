// Command shop-gosdk is an MCP server that knows nothing of chaosrun: a
// small shop written with the official MCP Go SDK the way a team would
// write its own, put under test by chaosrun from the wire alone (no ledger
// records, no control endpoints, no chaosrun code).
//
// Tools:
//
//	place_order {order_id, amount_cents}  calls the payment provider, which
//	                                      takes --work, then charges the order;
//	                                      not idempotent: every completed call
//	                                      charges
//	export_rows {rows}                    streams one progress notification per
//	                                      row, one every --row-interval
//
// Flags: --addr (host:port to serve MCP on, at /mcp), --work,
// --row-interval, --event-store-bytes (what the SDK's event store keeps
// for resumption; 0 is its default, 10 MiB), --progress (what an export's
// progress counts: rows 1, 2, 3 of N by default; fraction, 0.002 of 1;
// percent, 0.2 of 100; bytes, 512 of N×512) and --log-rows (print a line
// per progress notification sent), --receipt-kib (keep a receipt of that
// many KiB of every charged order in memory, never evicted: the unbounded
// cache a soak finds growing). Every charge is printed on stdout, the
// side effect a user would look for in the provider's dashboard. On
// SIGTERM it stops taking connections and lets running tools finish for up
// to 5 s.
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
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "host:port to serve MCP on (endpoint /mcp)")
	work := flag.Duration("work", 4*time.Second, "how long the payment provider takes to charge")
	interval := flag.Duration("row-interval", 10*time.Millisecond, "pause between two exported rows")
	storeBytes := flag.Int("event-store-bytes", 0, "bytes of events kept for resumption (0: the SDK's default)")
	unit := flag.String("progress", "rows", "what an export's progress counts: rows, fraction, percent or bytes")
	logRows := flag.Bool("log-rows", false, "print a line per progress notification sent")
	receiptKiB := flag.Int("receipt-kib", 0, "KiB of every charged order's receipt kept in memory, never evicted (0: none)")
	flag.Parse()
	receipts.kib = *receiptKiB
	scale, ok := progressUnits[*unit]
	if !ok {
		log.Fatalf("shop-gosdk: --progress %q: rows, fraction, percent or bytes", *unit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := serve(ctx, *addr, *work, *interval, *storeBytes, rowProgress{scale: scale, log: *logRows}); err != nil {
		log.Fatalf("shop-gosdk: %v", err)
	}
}

// receiptCache keeps charged orders' receipts, and nothing evicts them.
type receiptCache struct {
	kib int
	mu  sync.Mutex
	all [][]byte
}

var receipts receiptCache

// keep stores o's receipt, kib KiB of it (touched, so it is resident).
func (c *receiptCache) keep(o order) {
	if c.kib <= 0 {
		return
	}
	b := make([]byte, c.kib<<10)
	line := fmt.Appendf(nil, "receipt %s %d\n", o.OrderID, o.AmountCents)
	for i := 0; i < len(b); {
		i += copy(b[i:], line)
	}
	c.mu.Lock()
	c.all = append(c.all, b)
	c.mu.Unlock()
}

type order struct {
	OrderID     string `json:"order_id" jsonschema:"the order to charge"`
	AmountCents int    `json:"amount_cents" jsonschema:"the amount, in cents"`
}

type export struct {
	Rows int `json:"rows" jsonschema:"how many rows to export"`
}

// progressUnits turn row i of n into the progress and total an export
// reports: what real servers count (rows, a fraction, a percentage, bytes).
var progressUnits = map[string]func(i, n int) (float64, float64){
	"rows":     func(i, n int) (float64, float64) { return float64(i), float64(n) },
	"fraction": func(i, n int) (float64, float64) { return float64(i) / float64(n), 1 },
	"percent":  func(i, n int) (float64, float64) { return float64(i) * 100 / float64(n), 100 },
	"bytes":    func(i, n int) (float64, float64) { return float64(i) * 512, float64(n) * 512 },
}

// rowProgress is how an export reports its rows.
type rowProgress struct {
	scale func(i, n int) (float64, float64)
	log   bool // print a line per notification sent
}

func serve(ctx context.Context, addr string, work, interval time.Duration, storeBytes int, rows rowProgress) error {
	s := mcp.NewServer(&mcp.Implementation{Name: "shop-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "place_order", Description: "Charge an order through the payment provider"},
		func(_ context.Context, _ *mcp.CallToolRequest, o order) (*mcp.CallToolResult, any, error) {
			if o.OrderID == "" || o.AmountCents <= 0 {
				return nil, nil, errors.New("place_order needs an order_id and a positive amount_cents")
			}
			// The provider's client takes no context: once asked, it charges.
			time.Sleep(work)
			fmt.Printf("charged order %s: %d cents\n", o.OrderID, o.AmountCents)
			receipts.keep(o)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("charged %s %d", o.OrderID, o.AmountCents)}}}, nil, nil
		})
	mcp.AddTool(s, &mcp.Tool{Name: "export_rows", Description: "Export rows, reporting progress per row"},
		func(ctx context.Context, req *mcp.CallToolRequest, e export) (*mcp.CallToolResult, any, error) {
			token := req.Params.GetProgressToken()
			for i := 1; i <= e.Rows; i++ {
				time.Sleep(interval)
				if token == nil {
					continue
				}
				progress, total := rows.scale(i, e.Rows)
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
					ProgressToken: token, Progress: progress, Total: total,
				}); err != nil {
					return nil, nil, err
				}
				if rows.log {
					fmt.Printf("sent row %d of %d (session %s, progress token %v): progress %g of %g\n",
						i, e.Rows, req.Session.ID(), token, progress, total)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("exported %d rows", e.Rows)}}}, nil, nil
		})

	store := mcp.NewMemoryEventStore(nil)
	if storeBytes > 0 {
		store.SetMaxBytes(storeBytes)
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{EventStore: store})
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
		return err
	case <-ctx.Done():
	}
	drain, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(drain)
	return nil
}

// Command byo-server is a minimal bring-your-own MCP server for chaosrun: a
// program that knows nothing of chaosrun's code but the names of the
// environment contract of `target: command` and `target: image`
// (docs/byo-targets.md), which it takes from package targets/byo.
//
// It serves MCP Streamable HTTP on /mcp with the official Go SDK and two
// tools with the argument shapes every chaosrun target has:
//
//	charge {order_id, amount_cents, duration_ms?}
//	chatty {events, interval_ms?}
//
// (charge takes no idempotency key: every completed call charges), and writes its side effects to the ledger with plain net/http and
// encoding/json: call_started and call_finished around every call, one
// charge per completed charge, one event_emitted per progress notification.
//
// Environment (the names are byo's constants):
//
//	byo.EnvListenAddr  host:port to listen on (default 127.0.0.1:8080)
//	byo.EnvLedgerURL   POST records to its /records; empty logs them instead
//	byo.EnvBase        the run clock: t_us is microseconds since it (default: start time)
//	byo.EnvStateDir    a folder that survives restarts; one line per start goes to its file "starts"
//
// On SIGTERM it stops taking connections and lets open requests (running
// tools) finish for up to 5 s; a tool still running then ends with an error
// result.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chaosrun/chaosrun/targets/byo"
)

// requestIDHeader carries a tools/call's JSON-RPC id from the HTTP wrapper
// to the tool: the SDK does not show tools the id, and the ledger's records
// are matched to the client's history by it.
const requestIDHeader = "X-Byo-Request-Id"

// shutdownGrace bounds the graceful stop after SIGTERM.
const shutdownGrace = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		log.Fatalf("byo-server: %v", err)
	}
}

func run(ctx context.Context) error {
	addr := envOr(byo.EnvListenAddr, "127.0.0.1:8080")
	base := time.Now()
	if s := os.Getenv(byo.EnvBase); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %w", byo.EnvBase, err)
		}
		base = time.Unix(0, n)
	}
	l := &ledger{url: os.Getenv(byo.EnvLedgerURL), base: base, hc: &http.Client{Timeout: 10 * time.Second}}
	if err := noteStart(os.Getenv(byo.EnvStateDir), addr); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	log.Printf("byo-server listening on %s, ledger %q", ln.Addr(), l.url)
	t := &tools{ledger: l, stop: make(chan struct{})}
	srv := &http.Server{Handler: newHandler(t), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Printf("byo-server stopping")
	// Running tools may finish within the grace; what still runs then ends
	// with an error result.
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	err = srv.Shutdown(sctx)
	close(t.stop)
	if err != nil {
		return srv.Close()
	}
	return nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// noteStart appends one line per start to the file starts in the state folder.
func noteStart(dir, addr string) error {
	if dir == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(dir, "starts"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(f, "%d %s\n", os.Getpid(), addr); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func newHandler(t *tools) http.Handler {
	server := mcp.NewServer(&mcp.Implementation{Name: "byo-server", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "charge", Description: "Charge an order once, after duration_ms.",
		InputSchema: json.RawMessage(`{"type":"object","required":["order_id","amount_cents"]}`)}, t.charge)
	server.AddTool(&mcp.Tool{Name: "chatty", Description: "Emit numbered progress notifications.",
		InputSchema: json.RawMessage(`{"type":"object","required":["events"]}`)}, t.chatty)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{EventStore: mcp.NewMemoryEventStore(nil)})
	mux := http.NewServeMux()
	mux.Handle("/mcp", withRequestID(h))
	return mux
}

// withRequestID passes the JSON-RPC id of a POSTed tools/call to the tool
// in requestIDHeader.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del(requestIDHeader)
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
			if err != nil {
				http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "tools/call" && len(m.ID) > 0 {
				r.Header.Set(requestIDHeader, idString(m.ID))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// idString renders a JSON-RPC id as the ledger expects: a string id as
// itself, a number as its digits.
func idString(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(id))
}

// record is a ledger record (sideeffects/record.go in chaosrun): only the
// fields this server fills.
type record struct {
	ID          string `json:"id"`
	TUS         int64  `json:"t_us"`
	Kind        string `json:"kind"`
	Source      string `json:"source"`
	Session     string `json:"session,omitempty"`
	Client      string `json:"client,omitempty"`
	RequestID   string `json:"request_id,omitempty"`
	Tool        string `json:"tool,omitempty"`
	OrderID     string `json:"order_id,omitempty"`
	AmountCents int64  `json:"amount_cents,omitempty"`
	Seq         int64  `json:"seq,omitempty"`
	IsError     bool   `json:"is_error,omitempty"`
	Reason      string `json:"reason,omitempty"`
}

// ledger writes records to chaosrun's ledger service.
type ledger struct {
	url  string
	base time.Time
	hc   *http.Client
}

// write stores r, trying up to three times with the same id, which the
// ledger stores once however often it is sent.
func (l *ledger) write(r record) error {
	var b [16]byte
	_, _ = rand.Read(b[:])
	r.ID, r.Source, r.TUS = hex.EncodeToString(b[:]), "byo-server", time.Since(l.base).Microseconds()
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if l.url == "" {
		log.Printf("record %s", body)
		return nil
	}
	for attempt := 1; ; attempt++ {
		err = l.post(body)
		if err == nil || attempt == 3 {
			return err
		}
		time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
	}
}

func (l *ledger) post(body []byte) error {
	resp, err := l.hc.Post(l.url+"/records", "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("ledger answered %s: %s", resp.Status, bytes.TrimSpace(msg))
	}
	return nil
}

// tools runs charge and chatty. A tool keeps running when its client's
// connection drops: only stop (SIGTERM) ends it early.
type tools struct {
	ledger *ledger
	stop   chan struct{}
}

// call identifies one invocation in the ledger.
type call struct {
	session, client, requestID, tool, orderID string
}

func newCall(req *mcp.CallToolRequest, tool string) call {
	c := call{session: req.Session.ID(), tool: tool}
	if p := req.Session.InitializeParams(); p != nil && p.ClientInfo != nil {
		c.client = p.ClientInfo.Name
	}
	if req.Extra != nil && req.Extra.Header != nil {
		c.requestID = req.Extra.Header.Get(requestIDHeader)
	}
	return c
}

func (t *tools) started(c call) error {
	return t.ledger.write(record{Kind: "call_started", Session: c.session, Client: c.client,
		RequestID: c.requestID, Tool: c.tool, OrderID: c.orderID})
}

// finished records call_finished and returns the tool's result.
func (t *tools) finished(c call, text string, failure error) (*mcp.CallToolResult, error) {
	reason := ""
	if failure != nil {
		text, reason = failure.Error(), "error"
	}
	if err := t.ledger.write(record{Kind: "call_finished", Session: c.session, RequestID: c.requestID,
		Tool: c.tool, OrderID: c.orderID, IsError: failure != nil, Reason: reason}); err != nil {
		log.Printf("ledger: %v", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: failure != nil}, nil
}

// sleep waits d unless the server is stopping; it reports whether d passed.
func (t *tools) sleep(d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-t.stop:
		return false
	}
}

var errStopping = errors.New("server stopping")

// refused is the result of a call whose arguments are unusable: nothing ran,
// so nothing is recorded.
func refused(why string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: why}}, IsError: true}
}

func (t *tools) charge(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		OrderID     string `json:"order_id"`
		AmountCents int64  `json:"amount_cents"`
		DurationMS  int64  `json:"duration_ms"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.OrderID == "" || args.AmountCents <= 0 {
		return refused("charge needs order_id and a positive amount_cents"), nil
	}
	c := newCall(req, "charge")
	c.orderID = args.OrderID
	if err := t.started(c); err != nil {
		return t.finished(c, "", err)
	}
	if !t.sleep(time.Duration(args.DurationMS) * time.Millisecond) {
		return t.finished(c, "", errStopping)
	}
	err := t.ledger.write(record{Kind: "charge", Session: c.session, Client: c.client, RequestID: c.requestID,
		OrderID: args.OrderID, AmountCents: args.AmountCents})
	return t.finished(c, fmt.Sprintf("charged order %s: %d cents", args.OrderID, args.AmountCents), err)
}

func (t *tools) chatty(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	var args struct {
		Events     int   `json:"events"`
		IntervalMS int64 `json:"interval_ms"`
	}
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil || args.Events <= 0 || args.Events > 100_000 {
		return refused("chatty needs events between 1 and 100000"), nil
	}
	c := newCall(req, "chatty")
	if err := t.started(c); err != nil {
		return t.finished(c, "", err)
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		token = c.requestID
	}
	for seq := 1; seq <= args.Events; seq++ {
		if !t.sleep(time.Duration(args.IntervalMS) * time.Millisecond) {
			return t.finished(c, "", errStopping)
		}
		if err := t.ledger.write(record{Kind: "event_emitted", Session: c.session, RequestID: c.requestID,
			Seq: int64(seq)}); err != nil {
			return t.finished(c, "", err)
		}
		// A refused notification was still emitted: whether it arrived is
		// what chaosrun measures.
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token, Progress: float64(seq), Total: float64(args.Events)})
	}
	return t.finished(c, fmt.Sprintf("emitted %d events", args.Events), nil)
}

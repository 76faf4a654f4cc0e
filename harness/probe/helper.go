package probe

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The probe's helper programs run as the targets of generated
// experiments, started as "<this executable> probe helper MODE ...":
//
//	hold   stands in for a server already running elsewhere (--server-url):
//	       it starts nothing and waits to be stopped
//	forge  a bring-your-own client that makes the stream call, reads its
//	       stream to the end (so no stream of the session is still being
//	       written) and comes back with a Last-Event-ID shaped like the last
//	       one but never issued; what the server answers is on the wire
//
// A test binary serves as them when its TestMain calls RunHelperIfAsked.
var helperArgs = []string{"probe", "helper"}

func helperCommand(mode string, args ...string) []string {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return append(append([]string{exe}, append(helperArgs, mode)...), args...)
}

func holdCommand() []string { return helperCommand("hold") }

// RunHelperIfAsked runs a helper program and exits when the process was
// started as one; otherwise it returns at once.
func RunHelperIfAsked() {
	if len(os.Args) < 4 || os.Args[1] != helperArgs[0] || os.Args[2] != helperArgs[1] {
		return
	}
	os.Exit(RunHelper(os.Args[3:], os.Stderr))
}

// RunHelper runs the helper named by args[0] and returns its exit code.
func RunHelper(args []string, log io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(log, "probe helper: give a mode (hold, forge)")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var err error
	switch args[0] {
	case "hold":
		<-ctx.Done()
	case "forge":
		err = forge(ctx, args[1:], log)
	default:
		err = fmt.Errorf("unknown mode %q (hold, forge)", args[0])
	}
	if err != nil {
		fmt.Fprintf(log, "probe helper %s: %v\n", args[0], err)
		return 1
	}
	return 0
}

// forge is the unknown-cursor client.
func forge(ctx context.Context, args []string, log io.Writer) error {
	fs := flag.NewFlagSet("forge", flag.ContinueOnError)
	protocol := fs.String("protocol", mcp.LatestVersion, "protocol revision to initialize at")
	events := fs.Int("events", 0, "message events to read before disconnecting; 0 reads the stream to its end")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ops, err := loadOperations()
	if err != nil {
		return err
	}
	if len(ops.Operations) == 0 {
		return errors.New("no operation to make")
	}
	op := ops.Operations[0]
	c := &forger{url: os.Getenv(byo.EnvMCPURL), protocol: *protocol, hc: &http.Client{Timeout: time.Minute}}
	if err := c.initialize(ctx, op.Client); err != nil {
		return err
	}
	last, err := c.call(ctx, op.Tool, op.Arguments, *events)
	if err != nil {
		return err
	}
	status, body, err := c.resume(ctx, forged(last))
	fmt.Fprintf(log, "cursor %q forged from %q: %d %s\n", forged(last), last, status, body)
	return err
}

func loadOperations() (byo.Operations, error) {
	var ops byo.Operations
	b, err := os.ReadFile(os.Getenv(byo.EnvOperations))
	if err != nil {
		return ops, fmt.Errorf("operations: %w", err)
	}
	return ops, json.Unmarshal(b, &ops)
}

var trailingNumber = regexp.MustCompile(`^(.*?)(\d+)$`)

// forged is an event id the server never issued, shaped like the last one
// it did: its trailing number a million further on, or a suffix.
func forged(last string) string {
	if m := trailingNumber.FindStringSubmatch(last); m != nil {
		n, err := strconv.ParseInt(m[2], 10, 64)
		if err == nil {
			return m[1] + strconv.FormatInt(n+1_000_000, 10)
		}
	}
	return last + "-never-issued"
}

type forger struct {
	url, protocol, session string
	hc                     *http.Client
}

func (c *forger) post(ctx context.Context, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.session != "" {
		req.Header.Set(mcp.HeaderSessionID, c.session)
		req.Header.Set(mcp.HeaderProtocolVersion, c.protocol)
	}
	return c.hc.Do(req)
}

func (c *forger) initialize(ctx context.Context, client string) error {
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": 1, "method": mcp.MethodInitialize, "params": map[string]any{
		"protocolVersion": c.protocol, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": client, "version": "probe"}}})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("initialize: %s", resp.Status)
	}
	c.session = resp.Header.Get(mcp.HeaderSessionID)
	resp, err = c.post(ctx, map[string]any{"jsonrpc": "2.0", "method": mcp.MethodInitialized})
	if err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	resp.Body.Close()
	return nil
}

// call makes the tools/call, reads up to n message events of its stream
// and disconnects, returning the last event id read.
func (c *forger) call(ctx context.Context, tool string, args json.RawMessage, n int) (string, error) {
	resp, err := c.post(ctx, map[string]any{"jsonrpc": "2.0", "id": 2, "method": mcp.MethodToolsCall, "params": map[string]any{
		"name": tool, "arguments": args, "_meta": map[string]any{"progressToken": "probe"}}})
	if err != nil {
		return "", fmt.Errorf("tools/call: %w", err)
	}
	defer resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return "", fmt.Errorf("tools/call: answered %s %s, not an event stream: no event id to forge from", resp.Status, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	last, seen, data := "", 0, false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id:"):
			last = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "data:") && strings.TrimSpace(strings.TrimPrefix(line, "data:")) != "":
			data = true
		case line == "" && data:
			seen, data = seen+1, false
			if n > 0 && seen >= n {
				return last, nil
			}
		}
	}
	if last == "" {
		return "", errors.New("tools/call: the stream carried no event id")
	}
	return last, nil
}

// resume comes back with the given Last-Event-ID and reads the start of
// the answer.
func (c *forger) resume(ctx context.Context, cursor string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(mcp.HeaderSessionID, c.session)
	req.Header.Set(mcp.HeaderProtocolVersion, c.protocol)
	req.Header.Set("Last-Event-ID", cursor)
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, "", nil // a torn connection is an answer, and the wire has it
	}
	defer resp.Body.Close()
	b := make([]byte, 512)
	k, _ := io.ReadAtLeast(resp.Body, b, 1)
	return resp.StatusCode, string(b[:k]), nil
}

// unknownCursor runs the forging client against the server and reads its
// answer to a Last-Event-ID it never issued.
func (p *prober) unknownCursor(ctx context.Context, rev string) (Check, error) {
	const id = "cursor-unknown-answer"
	x := p.experiment("probe-"+rev+"-unknown-cursor",
		fmt.Sprintf("Read %s's stream at %s to its end, and come back with a Last-Event-ID the server never issued.", p.opts.Server.Stream.Tool, rev),
		rev, []lab.Call{p.opts.Server.Stream}, 0)
	x.Client = map[string]any{"target": targets.Command, "command": helperCommand("forge", "--protocol", rev)}
	x.Faults = nil
	o, err := p.run(ctx, x)
	if err != nil {
		return Check{}, err
	}
	if why := harnessFailed(o); why != "" {
		return cannot(id, checkName[id], why, o), nil
	}
	server := view(o.Wire, wire.EdgeServer)
	issued := map[string]bool{}
	for _, x := range server.exchanges {
		for _, e := range x.events {
			issued[e.EventID] = true
		}
	}
	for _, x := range server.exchanges {
		if !x.isResume() || issued[x.lastEventID()] {
			continue
		}
		ev := fmt.Sprintf("GET with Last-Event-ID %s, never issued (wire record %d): %s", x.lastEventID(), x.req.N, x.answer())
		var c Check
		switch st := x.status(); {
		case x.torn():
			c = verdictOf(id, checkName[id], false, ev, o)
			c.Figure = "torn connection"
		case st == http.StatusOK:
			c = verdictOf(id, checkName[id], false, ev+": a stream with no word that the cursor meant nothing", o)
			c.Figure = "200"
		default:
			c = verdictOf(id, checkName[id], st >= 400 && st != http.StatusNotFound, ev, o)
			c.Figure = strconv.Itoa(st)
		}
		return c, nil
	}
	return cannot(id, checkName[id], "the forging client never came back with a cursor (see its log in "+o.Folder+"/logs/client.log)", o), nil
}

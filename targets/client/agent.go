package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Target names.
const (
	TargetNaive     = targets.Naive
	TargetResumable = targets.Resumable
)

// Task modes (workload.Options.Tasks), spoken by the resumable client.
const (
	// TasksExtension is the io.modelcontextprotocol/tasks extension at
	// 2026-07-28.
	TasksExtension = "extension"
	// TasksLegacy is the experimental tasks of 2025-11-25: used on a
	// session whose server declares tasks.requests.tools.call, for a tool
	// whose execution.taskSupport is optional or required.
	TasksLegacy = "legacy"
)

// defaultBackoff is used when Options.Backoff is entirely zero.
func defaultBackoff() workload.Backoff {
	return workload.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second, Retries: 8}
}

// errStopped ends a client that received a server close event.
var errStopped = errors.New("server closed the session")

// Run runs one logical client's calls in order with the named target,
// "naive" or "resumable", writing everything to opts.History. It returns
// when every call has an outcome, when the client must stop (a server close
// event; Run then returns nil), or when ctx ends (Run returns ctx's error).
// A zero opts.Backoff means 100ms initial, 5s cap, 8 retries, and an empty
// opts.Protocol asks for mcp.LatestVersion.
// A call that could not be resolved is recorded as unknown, never silently
// dropped; the one exception is a resumable client with a file cursor whose
// ctx ends mid-call: the call stays in flight in the cursor, and the next
// Run on the same cursor resolves it.
func Run(ctx context.Context, target string, opts workload.Options, c workload.Client) error {
	switch target {
	case TargetNaive:
		return Naive(ctx, opts, c)
	case TargetResumable:
		return Resumable(ctx, opts, c)
	}
	return fmt.Errorf("client: unknown target %q (want %s or %s)", target, TargetNaive, TargetResumable)
}

// agent is what both clients share: one logical client's connection,
// history and randomness.
type agent struct {
	target  string
	opts    workload.Options
	client  workload.Client
	conn    *conn
	log     *slog.Logger
	rng     *rand.Rand
	nextID  int64
	histErr error
}

func newAgent(target string, opts workload.Options, c workload.Client) (*agent, error) {
	if opts.History == nil {
		return nil, errors.New("client: options carry no history writer")
	}
	if opts.Endpoint == "" {
		return nil, errors.New("client: options carry no endpoint")
	}
	if opts.Backoff == (workload.Backoff{}) {
		opts.Backoff = defaultBackoff()
	}
	if opts.Protocol == "" {
		opts.Protocol = mcp.LatestVersion
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := fnv.New64a()
	h.Write([]byte(c.ID))
	cn := newConn(opts.Endpoint, opts.ReadTimeout)
	cn.modern, cn.client = mcp.ModernVersion(opts.Protocol), c.ID
	cn.tasks = cn.modern && opts.Tasks == TasksExtension && target == TargetResumable
	cn.legacyTasks = !cn.modern && opts.Tasks == TasksLegacy && target == TargetResumable
	return &agent{
		target: target, opts: opts, client: c,
		conn:   cn,
		log:    log.With("client", c.ID, "target", target),
		rng:    rand.New(rand.NewPCG(uint64(opts.Seed), h.Sum64())),
		nextID: 1,
	}, nil
}

// record writes r for this client. A history that cannot be written is
// reported when the client ends; the client carries on meanwhile.
func (a *agent) record(r history.Record) {
	r.Client = a.client.ID
	if err := a.opts.History.Write(r); err != nil {
		a.log.Error("history write failed", "err", err)
		if a.histErr == nil {
			a.histErr = err
		}
	}
}

// finish writes client_stop and settles Run's error.
func (a *agent) finish(err error) error {
	detail := "done"
	switch {
	case errors.Is(err, errStopped):
		detail, err = "stopped: server close event", nil
	case err != nil:
		detail = err.Error()
	}
	a.record(history.Record{Kind: history.KindClientStop, Detail: detail})
	a.conn.close()
	if err == nil {
		err = a.histErr
	}
	return err
}

func (a *agent) takeID() int64 {
	id := a.nextID
	a.nextID++
	return id
}

// modern reports whether the client speaks 2026-07-28.
func (a *agent) modern() bool { return a.conn.modern }

// openSession initializes a new session and records it; at 2026-07-28,
// where there are no sessions, it asks server/discover instead and
// records nothing.
func (a *agent) openSession(ctx context.Context) error {
	if a.modern() {
		if err := a.conn.discover(ctx, a.requestID(a.takeID())); err != nil {
			return fmt.Errorf("client %s: %w", a.client.ID, err)
		}
		return nil
	}
	if err := a.conn.initialize(ctx, a.takeID(), a.client.ID, a.opts.Protocol); err != nil {
		return fmt.Errorf("client %s: %w", a.client.ID, err)
	}
	if a.conn.runsTasks {
		tt, err := a.conn.listTaskTools(ctx, a.takeID())
		if err != nil {
			a.conn.drop()
			return fmt.Errorf("client %s: %w", a.client.ID, err)
		}
		a.conn.taskTools = tt
	}
	a.record(history.Record{Kind: history.KindSessionNew, Session: a.conn.session, Protocol: a.conn.protocol})
	return nil
}

// dropSession forgets the session and records why; at 2026-07-28 there is
// none.
func (a *agent) dropSession(reason string) {
	if a.modern() {
		return
	}
	a.record(history.Record{Kind: history.KindSessionLost, Session: a.conn.session, Reason: reason})
	a.conn.drop()
}

// newStream builds the tools/call request of one attempt at a call.
func (a *agent) newStream(call workload.Call, attempt int) (*stream, error) {
	args, err := call.Arguments()
	if err != nil {
		return nil, fmt.Errorf("client %s: %w", a.client.ID, err)
	}
	n := a.takeID()
	id := a.requestID(n)
	cp := mcp.CallParams{Name: call.Tool, Arguments: args, Meta: a.conn.meta(json.RawMessage(id))}
	if a.conn.taskTool(call.Tool) {
		cp.Task = &mcp.TaskParams{}
	}
	params, err := json.Marshal(cp)
	if err != nil {
		return nil, fmt.Errorf("client %s: call %s: %w", a.client.ID, call.ID, err)
	}
	req := mcp.Message{JSONRPC: "2.0", ID: id, Method: mcp.MethodToolsCall, Params: params}
	return &stream{call: call, req: req, session: a.conn.session, requestID: mcp.IDString(id), attempt: attempt}, nil
}

// requestID renders request number n as a JSON-RPC id: the number within a
// session, and at 2026-07-28, where no session tells one client's requests
// from another's, a string naming the client ("c1-7").
func (a *agent) requestID(n int64) json.RawMessage {
	if a.modern() {
		b, _ := json.Marshal(a.client.ID + "-" + strconv.FormatInt(n, 10)) // a string always marshals
		return b
	}
	return json.RawMessage(strconv.FormatInt(n, 10))
}

func (a *agent) invokeRecord(s *stream) {
	a.record(history.Record{
		Kind: history.KindInvoke, Call: s.call.ID, OrderID: s.call.OrderID(), Tool: s.call.Tool,
		Session: s.session, RequestID: s.requestID, Attempt: s.attempt,
	})
}

func (a *agent) outcomeRecord(s *stream, out *outcome) {
	r := history.Record{
		Kind: out.kind, Call: s.call.ID, OrderID: s.call.OrderID(),
		Session: s.session, RequestID: s.requestID, Reason: out.reason, EventID: mcp.EventNumber(out.eventID),
	}
	if out.read {
		r.Result = history.ResultRead
	}
	a.record(r)
}

func (a *agent) breakRecord(s *stream, c Close) {
	r := history.Record{Kind: history.KindStreamBreak, Call: s.call.ID, Session: s.session, RequestID: s.requestID, Reason: c.Class()}
	switch {
	case c.Err != nil:
		r.Detail = c.Err.Error()
	case len(c.Body) > 0:
		r.Detail = string(c.Body)
	}
	a.record(r)
}

// backoff is the delay before reconnect attempt n (from 1): Initial doubled
// per attempt, capped at Max, with equal jitter (half fixed, half random),
// and never less than floor, the server's retry field.
func (a *agent) backoff(n int, floor time.Duration) time.Duration {
	b := a.opts.Backoff
	d := b.Initial
	for i := 1; i < n && (b.Max <= 0 || d < b.Max) && d < time.Hour; i++ {
		d *= 2
	}
	if b.Max > 0 && d > b.Max {
		d = b.Max
	}
	if half := d / 2; half > 0 {
		d = half + time.Duration(a.rng.Int64N(int64(d-half)+1))
	}
	return max(d, floor)
}

package sdkclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// ErrNoHistory is returned by [NewTracker] when the options carry no
// history writer.
var ErrNoHistory = errors.New("workload options carry no history writer")

// Tracker writes the history of one logical client driven through an SDK
// client. It is safe for concurrent use by the SDK's goroutines.
type Tracker struct {
	hist   *history.Writer
	client string
	target string
	log    *slog.Logger

	mu    sync.Mutex
	calls map[string]*Call  // by progress token
	wire  map[wireKey]int64 // event id of each progress notification seen
	err   error             // the first history write error
}

type wireKey struct {
	token string
	seq   int64
}

// NewTracker returns a tracker writing to opts.History for the logical
// client id, naming target in client_start.
func NewTracker(opts workload.Options, client, target string) (*Tracker, error) {
	if opts.History == nil {
		return nil, ErrNoHistory
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tracker{
		hist: opts.History, client: client, target: target, log: log.With("client", client),
		calls: map[string]*Call{}, wire: map[wireKey]int64{},
	}, nil
}

func (t *Tracker) write(r history.Record) {
	r.Client = t.client
	if err := t.hist.Write(r); err != nil {
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
	}
}

// Err is the first error writing the history, or nil.
func (t *Tracker) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// Start records client_start.
func (t *Tracker) Start() {
	t.write(history.Record{Kind: history.KindClientStart, Target: t.target, Detail: "fresh"})
}

// Stop records client_stop with detail.
func (t *Tracker) Stop(detail string) {
	t.write(history.Record{Kind: history.KindClientStop, Detail: detail})
}

// SessionNew records that the SDK initialized session at protocol.
func (t *Tracker) SessionNew(session, protocol string) {
	t.write(history.Record{Kind: history.KindSessionNew, Session: session, Protocol: protocol})
}

// SessionLost records that the client gave session up, for reason
// (status_404 or abandoned).
func (t *Tracker) SessionLost(session, reason, detail string) {
	t.write(history.Record{Kind: history.KindSessionLost, Session: session, Reason: reason, Detail: detail})
}

// Begin starts tracking one call made on session. The returned context
// must be the one the call is made with: the observing transport finds the
// call through it. The call's progress token is [Call.Token].
func (t *Tracker) Begin(ctx context.Context, spec workload.Call, session string) (context.Context, *Call) {
	t.mu.Lock()
	token := spec.ID
	for n := 2; t.calls[token] != nil; n++ {
		token = spec.ID + "#" + strconv.Itoa(n)
	}
	c := &Call{t: t, spec: spec, token: token, session: session, changed: make(chan struct{})}
	t.calls[token] = c
	t.mu.Unlock()
	return context.WithValue(ctx, callKey{}, c), c
}

type callKey struct{}

func callFrom(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// Progress records a progress notification the SDK delivered to the
// application, attributed to its call by token, with the event id it
// carried on the wire (0 when it had none).
func (t *Tracker) Progress(token any, progress float64) {
	key, seq := tokenKey(token), int64(progress)
	t.mu.Lock()
	c := t.calls[key]
	id := t.wire[wireKey{key, seq}]
	t.mu.Unlock()
	if c == nil {
		t.log.Warn("progress notification for an unknown token", "token", key, "progress", progress)
		return
	}
	c.event(seq, id)
}

// noteWire remembers the event id of a progress notification seen on the
// wire, and counts it toward its call.
func (t *Tracker) noteWire(p mcp.ProgressParams, eventID int64) {
	key := tokenKey(p.ProgressToken)
	t.mu.Lock()
	t.wire[wireKey{key, int64(p.Progress)}] = eventID
	c := t.calls[key]
	t.mu.Unlock()
	if c != nil {
		c.seenOnWire()
	}
}

// Transport returns an http.RoundTripper, to put under the SDK's HTTP
// client, that observes the SDK's traffic for the history.
func (t *Tracker) Transport(base http.RoundTripper) http.RoundTripper {
	return &observer{t: t, base: base}
}

// tokenKey renders a progress token the way both ends compare it.
func tokenKey(token any) string {
	switch v := token.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(token)
}

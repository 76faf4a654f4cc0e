package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/wire"
)

// ErrInjection marks the error [Run] returns when an injection or its heal
// failed; the failure is also in the fault log.
var ErrInjection = errors.New("fault injection failed")

const (
	// healTimeout bounds a heal that runs after the run's context ended.
	healTimeout = 30 * time.Second
	// injectTimeout bounds one injection, which is not cut short when the
	// run's context ends; a graceful restart may wait 30 s for a drain.
	injectTimeout = 2 * time.Minute
	// lingerToxic is the zero-toxicity reset_peer that makes closes RSTs.
	lingerToxic = "chaosrun-linger"
)

// Processes restarts and pauses the agents of a run. The runtime (child
// processes or containers) implements it. An agent is named by its role,
// or, for a replica of the server, by [AgentName] ("server-2").
type Processes interface {
	// Restart stops the agent in role — SIGTERM and wait when graceful,
	// SIGKILL otherwise — and starts it again with the same arguments and
	// state.
	Restart(ctx context.Context, role string, graceful bool) error
	// Pause freezes the agent (SIGSTOP, a container pause).
	Pause(ctx context.Context, role string) error
	// Resume thaws a paused agent.
	Resume(ctx context.Context, role string) error
}

// Env is what an injector needs from the runner. Only the handles the plan's
// kinds use must be set: Toxiproxies and Proxy for proxy faults (and Edges
// for reset and a refusing partition), Processes for process faults,
// ControlURL for session faults.
type Env struct {
	Clock runclock.Clock // the run's base clock; fault windows are logged on it
	// WorkloadStart is the offset on Clock at which the workload starts;
	// injection times are relative to it.
	WorkloadStart time.Duration
	// Toxiproxies is each proxy agent's API: one, or several that each
	// carry a share of the clients. A proxy fault acts on the proxy named
	// Proxy in every one of them, as one fault with one log entry.
	Toxiproxies []*toxiclient.Client
	Proxy       string // the name of the proxy between client and server
	Processes   Processes
	// ControlURL is the server's control base URL: session faults POST to
	// {ControlURL}/control/expire and /control/terminate.
	ControlURL string
	HTTPClient *http.Client // for the control calls; nil uses a 10 s timeout client
	Log        *Log         // receives one entry per injection
	// Triggers arms the plan's protocol triggers and waits for their
	// firings; only a plan with triggers needs it.
	Triggers Triggers
	// Edges is the proxy agent's observer of the proxy: a refusing
	// partition refuses at its client edge, and a reset has it reset the
	// connections it holds.
	Edges Edges
	// Progress, if set, hears of every injection, heal and failure as it
	// happens. Calls are serialised; it must return quickly.
	Progress func(Event)
	// Ready, if set, is called once when Run has put in place what must
	// precede the workload's first connection (the reset marker, the
	// protocol triggers), or has failed to: a runner starts the workload
	// after it, so that no call goes by before its trigger is armed.
	Ready func()
}

// Triggers is the proxy agent's protocol triggers, as the injector uses
// them (package faults/proxy's Client implements it).
type Triggers interface {
	// Arm arms the triggers; they evaluate the wire from then on.
	Arm(ctx context.Context, ts []trigger.Trigger) error
	// Fired waits until the trigger with the given id fires, or ctx ends.
	Fired(ctx context.Context, id string) (trigger.Firing, error)
	// Healed tells the triggers that fault index healed at atUS.
	Healed(ctx context.Context, index int, atUS int64) error
}

// Edges is the proxy agent's hold on the connections through its observed
// proxy, as the injector uses it (package faults/proxy's Client and Group
// implement it).
type Edges interface {
	// Refuse has edge refuse new connections; Accept has it listen again
	// on the same address.
	Refuse(ctx context.Context, edge wire.Edge) error
	Accept(ctx context.Context, edge wire.Edge) error
	// Reset resets every connection open through the proxy now, and
	// returns how many and the window it acted in.
	Reset(ctx context.Context) (conns int, fromUS, toUS int64, err error)
	// StartResets resets, until StopResets(id), every connection after
	// the later of now and its opening; StopResets returns how many it
	// reset. Both return the instant they took effect.
	StartResets(ctx context.Context, id string, after time.Duration) (fromUS int64, err error)
	StopResets(ctx context.Context, id string) (conns int, toUS int64, err error)
}

// Phase is what happened to an injection.
type Phase string

// Phases of an injection, in the order they happen.
const (
	PhaseInjected Phase = "injected"
	PhaseHealed   Phase = "healed" // only for faults that are healed
	PhaseFailed   Phase = "failed" // the injection or its heal failed
)

// Event reports progress of one injection to [Env.Progress].
type Event struct {
	Phase  Phase
	Index  int // position of the fault in the experiment's list
	Repeat int
	Kind   string
	Target string
	// Stops says the injection stops the process it targets, and every
	// call the process was running with it (see [Target]).
	Stops  bool
	At     time.Duration // on the run's clock
	Detail string
	Err    error // set when Phase is PhaseFailed
}

// Run injects the plan: it waits for each injection's time (WorkloadStart
// plus the injection's offset, on env.Clock; an injection already due is
// applied at once), injects it, heals it once its hold has passed, and
// heals everything still in effect when ctx ends — a runner cancels ctx
// when the workload is over. Injections run concurrently, so a slow one
// never delays the next. Each injection that was attempted is logged to
// env.Log with its window on the clock; one whose time comes after ctx
// ended is neither applied nor logged. A failed injection or heal is
// logged with its error and does not stop the others; Run returns once
// every injection is done, with the failures joined and marked
// [ErrInjection].
//
// Run takes the plan's params as valid: a loader checks every fault once,
// when it reads the experiment (package harness/spec does), and a caller
// that builds specs itself checks them with their Validate methods before
// planning. Run only refuses an injection with no params, a kind the
// catalogue does not have, and logs it as failed.
//
// When the plan asks for resets (a reset fault, or an idle_timeout with
// close: reset), Run first installs a zero-toxicity reset_peer on the
// proxy and keeps it until it returns. Toxiproxy then gives every
// connection opened meanwhile SO_LINGER 0, so every close of those
// connections — by any fault, or by either peer — reaches the other side
// as an RST. Start Run before the workload opens its connections (wait
// for env.Ready): the ones already open close with a FIN, and a call made
// before the triggers are armed goes unseen by them.
func Run(ctx context.Context, env Env, plan []Injection) error {
	if env.Log == nil {
		return errors.New("faults: run: no fault log")
	}
	r := &run{env: env, http: env.HTTPClient, holds: map[string]int{}}
	if r.http == nil {
		r.http = &http.Client{Timeout: 10 * time.Second}
	}
	ready := sync.OnceFunc(func() {
		if env.Ready != nil {
			env.Ready()
		}
	})
	defer ready()
	if wantsRST(plan) {
		if err := r.addLinger(); err != nil {
			return fmt.Errorf("faults: run: %w", err)
		}
	}
	if ts := PlanTriggers(plan); len(ts) > 0 && env.Triggers != nil {
		if err := env.Triggers.Arm(ctx, ts); err != nil {
			return fmt.Errorf("faults: run: arm triggers: %w", err)
		}
	}
	ready()
	errs := make([]error, len(plan), len(plan)+1)
	var wg sync.WaitGroup
	for i, in := range plan {
		wg.Go(func() { errs[i] = r.one(ctx, in) })
	}
	wg.Wait()
	if r.linger {
		if err := r.removeToxic(lingerToxic); err != nil {
			errs = append(errs, fmt.Errorf("faults: run: remove %s: %w", lingerToxic, err))
		}
	}
	return errors.Join(errs...)
}

func wantsRST(plan []Injection) bool {
	for _, in := range plan {
		if r, ok := in.Params.(Resetting); ok && r.ClosesByReset() {
			return true
		}
	}
	return false
}

// run is the state of one Run.
type run struct {
	env    Env
	http   *http.Client
	linger bool // the reset_peer marker is installed

	mu    sync.Mutex
	holds map[string]int // shared effects (refuse, pause of a role) by key → holders

	progress sync.Mutex
}

// one waits for, applies, heals and logs one injection.
func (r *run) one(ctx context.Context, in Injection) error {
	e := Entry{Index: in.Index, Repeat: in.Repeat, Kind: in.Kind, Target: r.target(in), Params: paramsMap(in.Written), stops: stops(in.Params)}
	base := r.env.WorkloadStart
	if in.Trigger != nil {
		f, err := r.fired(ctx, in, &e)
		if err != nil {
			return err
		}
		if f == nil {
			return nil
		}
		base = time.Duration(f.AtUS) * time.Microsecond
	}
	if !r.env.Clock.SleepUntil(ctx, base+in.At) {
		return nil
	}
	start := r.env.Clock.Now()
	e.StartUS = start.Microseconds()
	// An injection that has begun runs to its end even if the run ends
	// meanwhile: a restart cut off between its stop and its start would
	// leave the agent down.
	ictx, cancelInject := context.WithTimeout(context.WithoutCancel(ctx), injectTimeout)
	in.acted = &acted{}
	h, detail, err := r.inject(ictx, in)
	cancelInject()
	e.Detail = detail
	if err != nil {
		return r.end(&e, fmt.Errorf("inject: %w", err))
	}
	// The log keeps the window the proxy reports it acted in, when it
	// reports one, rather than the span of the calls that made it act, and
	// the fault's hold counts from there.
	if in.acted.fromUS > 0 {
		e.StartUS = in.acted.fromUS
		start = time.Duration(in.acted.fromUS) * time.Microsecond
	}
	r.emit(PhaseInjected, &e, e.StartUS, nil)
	if h == nil {
		e.EndUS = in.acted.toUS
		return r.end(&e, nil)
	}
	if in.Hold > 0 {
		r.env.Clock.SleepUntil(ctx, start+in.Hold)
	} else {
		<-ctx.Done()
	}
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), healTimeout)
	defer cancel()
	if err := h(hctx); err != nil {
		return r.endHealFailed(&e, fmt.Errorf("heal: %w", err))
	}
	healed := r.env.Clock.Micros()
	if in.acted.toUS > 0 {
		healed = in.acted.toUS
	}
	e.EndUS = healed
	if in.acted.healed != "" {
		e.Detail += "; healed: " + in.acted.healed
	}
	r.emit(PhaseHealed, &e, healed, nil)
	if r.env.Triggers != nil {
		if err := r.env.Triggers.Healed(hctx, in.Index, healed); err != nil {
			return r.end(&e, fmt.Errorf("tell the triggers of the heal: %w", err))
		}
	}
	return r.end(&e, nil)
}

// fired waits for the trigger that gates in, and notes in e what fired it.
// It returns nil, nil when the run ended first: a trigger that never fired
// is logged, for the first repetition, as an injection that failed, so the
// log says what the fault waited for.
func (r *run) fired(ctx context.Context, in Injection, e *Entry) (*trigger.Firing, error) {
	e.Trigger = in.Trigger.String()
	if r.env.Triggers == nil {
		e.StartUS = r.env.Clock.Micros()
		return nil, r.end(e, errors.New("no protocol triggers in this run (the proxy has no wire observer)"))
	}
	f, err := r.env.Triggers.Fired(ctx, in.Trigger.ID)
	switch {
	case err == nil && f.Err == "":
		e.FiredBy, e.FiredUS = f.Detail, f.AtUS
		return &f, nil
	case in.Repeat > 0:
		return nil, nil
	case err == nil:
		err = errors.New(f.Err)
	case ctx.Err() != nil:
		err = errors.New("the run ended first")
	}
	e.StartUS = r.env.Clock.Micros()
	return nil, r.end(e, fmt.Errorf("trigger never fired (%s): %w", e.Trigger, err))
}

// inject applies one injection. Its params were validated once, where
// the experiment was loaded, so they are not checked again here; an
// injection without params (a kind the catalogue lacks, from a caller that
// planned specs it never validated) is the one thing Run cannot act on.
func (r *run) inject(ctx context.Context, in Injection) (heal, string, error) {
	if in.Params == nil {
		return nil, "", fmt.Errorf("%w %q", ErrUnknownKind, in.Kind)
	}
	return in.Params.inject(ctx, r, in)
}

// end closes and writes an injection's log entry, ending its window now
// unless the proxy reported its end.
func (r *run) end(e *Entry, err error) error {
	if e.EndUS == 0 {
		e.EndUS = r.env.Clock.Micros()
	}
	if err != nil {
		e.Error = err.Error()
		r.emit(PhaseFailed, e, e.EndUS, err)
		err = fmt.Errorf("%w: %s (fault %d, repeat %d): %w", ErrInjection, e.Kind, e.Index, e.Repeat, err)
	}
	if werr := r.env.Log.Write(*e); werr != nil {
		return errors.Join(err, fmt.Errorf("faults: %w", werr))
	}
	return err
}

// endHealFailed closes the log entry of a fault that acted but could not be
// undone: it stays an injection (its window counts), with the heal's error.
func (r *run) endHealFailed(e *Entry, err error) error {
	e.EndUS = r.env.Clock.Micros()
	e.HealError = err.Error()
	r.emit(PhaseFailed, e, e.EndUS, err)
	err = fmt.Errorf("%w: %s (fault %d, repeat %d): %w", ErrInjection, e.Kind, e.Index, e.Repeat, err)
	if werr := r.env.Log.Write(*e); werr != nil {
		return errors.Join(err, fmt.Errorf("faults: %w", werr))
	}
	return err
}

func (r *run) emit(ph Phase, e *Entry, atUS int64, err error) {
	if r.env.Progress == nil {
		return
	}
	r.progress.Lock()
	defer r.progress.Unlock()
	r.env.Progress(Event{
		Phase: ph, Index: e.Index, Repeat: e.Repeat, Kind: e.Kind, Target: e.Target, Stops: e.stops,
		At: time.Duration(atUS) * time.Microsecond, Detail: e.Detail, Err: err,
	})
}

// target names what an injection acts on: the proxy, an agent's role, or
// the server for the faults that reach it through its control endpoint.
func (r *run) target(in Injection) string {
	switch p := in.Params.(type) {
	case nil:
		return ""
	case Targeted:
		return p.Target().Name()
	case Controlled:
		return "server"
	}
	return r.env.Proxy
}

// stops says whether an injection stops the process it targets.
func stops(p Params) bool {
	t, ok := p.(Targeted)
	return ok && t.Target().Stops
}

// paramsMap is the params as the experiment wrote them, at real-world
// scale, for the log: the figures a reader finds in the experiment file.
func paramsMap(p Params) map[string]any {
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil || len(m) == 0 {
		return nil
	}
	return m
}

func (r *run) processes() (Processes, error) {
	if r.env.Processes == nil {
		return nil, errors.New("no process control in this run")
	}
	return r.env.Processes, nil
}

// shared applies an effect several injections may hold at once (the
// proxy's refusal, a role's pause): on runs for the first holder, off when
// the last one heals.
func (r *run) shared(ctx context.Context, key string, on, off func(context.Context) error, detail string) (heal, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.holds[key] == 0 {
		if err := on(ctx); err != nil {
			return nil, "", err
		}
	} else {
		detail += " (already in effect)"
	}
	r.holds[key]++
	h := func(ctx context.Context) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.holds[key]--
		if r.holds[key] > 0 {
			return nil
		}
		return off(ctx)
	}
	return h, detail, nil
}

func formatAttrs(attrs toxiclient.Attributes) string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%v", k, attrs[k])
	}
	return b.String()
}

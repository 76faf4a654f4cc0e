package faults

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
)

// Kind names, as written in experiment files. They are stable.
const (
	KindIdleTimeout      = "idle_timeout"
	KindReset            = "reset"
	KindLatency          = "latency"
	KindBandwidth        = "bandwidth"
	KindSlicer           = "slicer"
	KindLimitData        = "limit_data"
	KindPartition        = "partition"
	KindHTTPStatus       = "http_status"
	KindRestart          = "restart"
	KindCrash            = "crash"
	KindPause            = "pause"
	KindExpireSession    = "expire_session"
	KindTerminateSession = "terminate_session"
	KindDropTasks        = "drop_tasks"
)

// ErrUnknownKind is returned for a fault kind the catalogue does not have.
var ErrUnknownKind = errors.New("unknown fault kind")

// Params is the parameters of one fault kind as an experiment states them:
// durations at real-world scale. The implementations are the params
// structs of this package (one per kind, see [NewParams]); their fields
// carry yaml and json tags, so a loader decodes an experiment's params:
// mapping straight into them. [Plan] gives each injection a copy at run
// scale, which is what inject reads.
type Params interface {
	// Validate checks the parameters. Each problem is a *field.Error
	// naming the offending field as written in the file ("idle"), joined
	// (errors.Join) when there are several.
	Validate() error

	// window is the length of the fault's scheduled effect.
	window() dur.Duration
	// hold is how long the fault stays before it is healed; 0 means until
	// the run ends (for faults that are healed at all).
	hold() dur.Duration
	// inject applies the fault, its receiver already at run scale, and
	// returns how to heal it (nil for an instant fault) and a line
	// describing what was done.
	inject(ctx context.Context, r *run, in Injection) (heal, string, error)
}

// heal undoes an injected fault.
type heal func(ctx context.Context) error

var catalogue = map[string]func() Params{
	KindIdleTimeout:      func() Params { return new(IdleTimeout) },
	KindReset:            func() Params { return new(Reset) },
	KindLatency:          func() Params { return new(Latency) },
	KindBandwidth:        func() Params { return new(Bandwidth) },
	KindSlicer:           func() Params { return new(Slicer) },
	KindLimitData:        func() Params { return new(LimitData) },
	KindPartition:        func() Params { return new(Partition) },
	KindHTTPStatus:       func() Params { return new(HTTPStatus) },
	KindRestart:          func() Params { return new(Restart) },
	KindCrash:            func() Params { return new(Crash) },
	KindPause:            func() Params { return new(Pause) },
	KindExpireSession:    func() Params { return new(ExpireSession) },
	KindTerminateSession: func() Params { return new(TerminateSession) },
	KindDropTasks:        func() Params { return new(DropTasks) },
}

// Kinds lists every fault kind, sorted.
func Kinds() []string {
	out := make([]string, 0, len(catalogue))
	for k := range catalogue {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// NewParams returns a pointer to the zero params struct of kind, ready to
// decode an experiment's params: mapping into. An absent mapping leaves it
// zero, which Validate judges like any other value.
func NewParams(kind string) (Params, error) {
	mk, ok := catalogue[kind]
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownKind, kind, strings.Join(Kinds(), ", "))
	}
	return mk(), nil
}

// Streams of a proxy connection a toxic can act on.
const (
	Upstream   = "upstream"   // client to server
	Downstream = "downstream" // server to client
)

func positive(name string, d dur.Duration) error {
	if d <= 0 {
		return field.Errorf(name, "must be positive")
	}
	return nil
}

func notNegative(name string, d dur.Duration) error {
	if d < 0 {
		return field.Errorf(name, "must not be negative")
	}
	return nil
}

func oneOf(name, v string, allowed ...string) error {
	if slices.Contains(allowed, v) {
		return nil
	}
	if len(allowed) == 2 {
		return field.Errorf(name, "must be %s or %s, got %q", allowed[0], allowed[1], v)
	}
	return field.Errorf(name, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
}

// stream checks an optional stream field; empty means downstream.
func stream(s string) (string, error) {
	if s == "" {
		return Downstream, nil
	}
	return s, oneOf("stream", s, Upstream, Downstream)
}

// millis rounds a duration at run scale to whole milliseconds, the unit of
// Toxiproxy's attributes. A positive duration never rounds down to 0, which
// several toxics read as "off".
func millis(d dur.Duration) int64 {
	return units(d, time.Millisecond)
}

func micros(d dur.Duration) int64 {
	return units(d, time.Microsecond)
}

func units(d dur.Duration, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	n := math.Round(float64(d) / float64(unit))
	return int64(max(1, n))
}

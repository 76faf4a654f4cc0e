package explore

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/targets"
)

// Bounds limit the schedules explore draws: an experiment's explore:
// block, or the command's flags.
type Bounds struct {
	// Kinds are the fault kinds drawn from; empty: every kind the
	// experiment's targets can take (DefaultKinds).
	Kinds []string `yaml:"kinds"`
	// MaxFaults bounds the faults of one schedule (default 3).
	MaxFaults int `yaml:"max_faults"`
	// MaxWindow bounds every window, idle time and delay, at real-world
	// scale (default 4m).
	MaxWindow time.Duration `yaml:"max_window"`
}

func (b Bounds) withDefaults(server string) Bounds {
	if len(b.Kinds) == 0 {
		b.Kinds = DefaultKinds(server)
	}
	if b.MaxFaults <= 0 {
		b.MaxFaults = 3
	}
	if b.MaxWindow <= 0 {
		b.MaxWindow = 4 * time.Minute
	}
	return b
}

// DefaultKinds are the kinds drawn from when the bounds name none: the
// transport's faults and the processes', and the session faults where the
// server has the control endpoint they need (chaosrun's reference server).
func DefaultKinds(server string) []string {
	kinds := []string{faults.KindIdleTimeout, faults.KindReset, faults.KindPartition, faults.KindHTTPStatus,
		faults.KindLatency, faults.KindCrash, faults.KindRestart, faults.KindPause}
	if server == targets.Reference {
		kinds = append(kinds, faults.KindExpireSession, faults.KindTerminateSession)
	}
	slices.Sort(kinds)
	return kinds
}

// Fault is one drawn fault: an experiment's faults: entry.
type Fault struct {
	Kind string
	// At is the offset (real-world), from the workload's start or, with
	// OnCall, from the call's reaching the server.
	At     time.Duration
	OnCall string // the tool whose call triggers it; "" for a time
	// Params are the kind's parameters; durations are real-world.
	Params map[string]any
}

// entry renders the fault as a faults: entry.
func (f Fault) entry() map[string]any {
	params := map[string]any{}
	for k, v := range f.Params {
		if d, ok := v.(time.Duration); ok {
			params[k] = lab.Duration(d)
			continue
		}
		params[k] = v
	}
	if f.OnCall != "" {
		return lab.Fault(f.Kind, map[string]any{"event": trigger.EventToolsCall, "tool": f.OnCall, "after": lab.Duration(f.At)}, 0, params)
	}
	e := lab.Fault(f.Kind, nil, f.At, params)
	if f.At == 0 {
		e["at"] = "0s"
	}
	return e
}

// String describes the fault in a few words.
func (f Fault) String() string {
	when := "at " + f.At.String()
	if f.OnCall != "" {
		when = fmt.Sprintf("%s into %s", f.At, f.OnCall)
	}
	var ps []string
	for _, k := range slices.Sorted(maps.Keys(f.Params)) {
		ps = append(ps, fmt.Sprintf("%s: %v", k, f.Params[k]))
	}
	if len(ps) == 0 {
		return f.Kind + " " + when
	}
	return fmt.Sprintf("%s {%s} %s", f.Kind, strings.Join(ps, ", "), when)
}

// Schedule is one drawn set of faults.
type Schedule []Fault

// draw draws the i-th schedule of the seed: the same seed and index give
// the same schedule, whatever ran before.
func draw(seed int64, i int, b Bounds, calls []lab.Call, span time.Duration) Schedule {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
	n := 1 + rng.IntN(b.MaxFaults)
	s := make(Schedule, n)
	for k := range s {
		s[k] = drawFault(rng, b, calls, span)
	}
	return s
}

func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return (lo + time.Duration(rng.Int64N(int64(hi-lo)))).Round(time.Second)
}

func drawFault(rng *rand.Rand, b Bounds, calls []lab.Call, span time.Duration) Fault {
	f := Fault{Kind: b.Kinds[rng.IntN(len(b.Kinds))]}
	window := func() time.Duration { return between(rng, time.Second, b.MaxWindow) }
	if len(calls) > 0 && rng.IntN(2) == 0 {
		c := calls[rng.IntN(len(calls))]
		d, _ := time.ParseDuration(c.Duration)
		f.OnCall, f.At = c.Tool, between(rng, 0, max(d, time.Second))
	} else {
		f.At = between(rng, 0, max(span, time.Second))
	}
	role := []string{"client", "server"}[rng.IntN(2)]
	switch f.Kind {
	case faults.KindIdleTimeout:
		f.Params = map[string]any{"idle": window(), "close": []string{"fin", "reset"}[rng.IntN(2)]}
	case faults.KindReset:
		f.Params = map[string]any{}
	case faults.KindPartition:
		f.Params = map[string]any{"for": window(), "mode": []string{"refuse", "blackhole"}[rng.IntN(2)]}
	case faults.KindHTTPStatus:
		f.Params = map[string]any{"status": []int{500, 502, 503, 504}[rng.IntN(4)], "for": window()}
	case faults.KindLatency:
		f.Params = map[string]any{"latency": between(rng, 100*time.Millisecond, min(b.MaxWindow, 10*time.Second)), "for": window()}
	case faults.KindCrash:
		f.Params = map[string]any{"role": role}
	case faults.KindRestart:
		f.Params = map[string]any{"role": role, "graceful": rng.IntN(2) == 0}
	case faults.KindPause:
		f.Params = map[string]any{"role": role, "for": window()}
	default:
		f.Params = map[string]any{}
	}
	return f
}

// durationParams are the parameters a shrink shortens.
var durationParams = []string{"for", "idle", "latency", "down"}

// candidates lists the schedules one shrink step tries, in order: fewer
// faults, then each window halved, then each fault earlier, then each
// status lower. The order is fixed, so a shrink is deterministic.
func (s Schedule) candidates() []Schedule {
	var out []Schedule
	if len(s) > 1 {
		for i := range s {
			out = append(out, append(slices.Clone(s[:i]), s[i+1:]...))
		}
	}
	for i, f := range s {
		for _, p := range durationParams {
			if d, ok := f.Params[p].(time.Duration); ok && d > time.Second {
				c := s.cloned()
				c[i].Params[p] = max((d / 2).Truncate(time.Second), time.Second)
				out = append(out, c)
			}
		}
	}
	for i, f := range s {
		if f.At > 0 {
			c := s.cloned()
			c[i].At = (f.At / 2).Truncate(time.Second)
			out = append(out, c)
		}
	}
	return out
}

func (s Schedule) cloned() Schedule {
	c := make(Schedule, len(s))
	for i, f := range s {
		f.Params = cloneMap(f.Params)
		c[i] = f
	}
	return c
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

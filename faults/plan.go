package faults

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
)

// MaxRepeat bounds how many times one fault is repeated.
const MaxRepeat = 10000

// Spec is one entry of an experiment's faults list, at real-world scale.
// Its yaml tags are the experiment file's schema, with one exception:
// the struct a params: mapping decodes into depends on Kind, so a loader
// decodes that mapping itself, into [NewParams](Kind) (package harness/spec
// does, strictly, once, when it loads the experiment).
//
// A fault fires At after the workload's start or, with When, At after its
// protocol trigger fired (see package faults/trigger): when the wire showed
// the event, however long the client took to get there.
type Spec struct {
	Kind   string        `yaml:"kind"`
	At     dur.Duration  `yaml:"at"`   // offset from the workload's start, or from the trigger's firing
	When   *trigger.When `yaml:"when"` // nil: the fault fires at a time
	Params Params        `yaml:"-"`    // params:, decoded by kind; nil: the kind's zero params
	Repeat *Repeat       `yaml:"repeat"`
}

// Repeat injects a fault Count times in all, Every apart, each time shifted
// later by a seeded random offset of at most Jitter.
type Repeat struct {
	Every  dur.Duration `yaml:"every"`
	Count  int          `yaml:"count"`
	Jitter dur.Duration `yaml:"jitter"`
}

// Validate checks a repeat block; a problem is a *field.Error.
func (r Repeat) Validate() error {
	if r.Count < 1 || r.Count > MaxRepeat {
		return field.Errorf("count", "must be between 1 and %d, got %d", MaxRepeat, r.Count)
	}
	if err := positive("every", r.Every); err != nil {
		return err
	}
	if r.Jitter < 0 || r.Jitter > r.Every {
		return field.Errorf("jitter", "must be between 0 and every (%s)", r.Every)
	}
	return nil
}

// Injection is one planned injection of a fault, at run scale. [Plan] is
// the one place a fault is scaled: an injector reads Params' durations as
// they are.
type Injection struct {
	Index  int           // position of the fault in the experiment's list
	Repeat int           // which repetition: 0 for the first
	Kind   string        // the fault kind
	At     time.Duration // scaled offset from the workload's start, or from Trigger's firing
	// Trigger, when set, gates the injection: it waits for the trigger to
	// fire, and At counts from the firing. Every repetition of a fault
	// shares its fault's trigger.
	Trigger *trigger.Trigger
	// Window is the scaled length of the fault's scheduled effect — the
	// idle timeout for idle_timeout, For for windowed faults, 0 for instant
	// ones — which a runner adds up into the run's scheduled time.
	Window time.Duration
	// Hold is how long, scaled, the fault stays before it is healed; 0
	// means until the run ends (instant faults are never healed).
	Hold time.Duration
	// Params are the fault's parameters at run scale: every duration
	// multiplied by the time scale. Written are the same parameters as the
	// experiment wrote them, at real-world scale, which the fault log
	// records. Both are shared by the fault's repetitions: read only.
	Params  Params
	Written Params

	// acted is where an injection notes the window the proxy reports it
	// acted in, when the proxy reports one; one per call of one.
	acted *acted
}

// acted is the window a proxy reports an injection acted in, on the run's
// clock (0 for an end it did not report), and what its heal found out
// about it, for the log.
type acted struct {
	fromUS, toUS int64
	healed       string
}

// Plan expands specs into the injections of a run, sorted by time (ties
// keep the order of the list). A one-shot reset is planned at its time
// plus its After, when it takes effect. Every offset, window and duration
// parameter is multiplied by timeScale (a non-positive scale counts as 1),
// here and nowhere else: package harness/spec scales the rest of an
// experiment, but only this package knows which parameters of a fault are
// durations. Jitter is drawn from a generator seeded by seed and the
// fault's index, so the same seed gives the same schedule and adding a
// fault leaves the others' jitter alone. A repeat count is held between 1
// and [MaxRepeat].
//
// Plan takes specs as valid (see [Run]); a nil Params is the kind's zero
// params, and an unknown kind plans injections without params.
func Plan(specs []Spec, timeScale float64, seed int64) []Injection {
	if timeScale <= 0 {
		timeScale = 1
	}
	var out []Injection
	for i, s := range specs {
		written := s.Params
		if written == nil {
			written, _ = NewParams(s.Kind) // nil for an unknown kind: Run reports it
		}
		var params Params
		if written != nil {
			params = atScale(written, timeScale)
		}
		count, every, jitter := 1, dur.Duration(0), dur.Duration(0)
		if s.Repeat != nil {
			count, every, jitter = min(max(s.Repeat.Count, 1), MaxRepeat), s.Repeat.Every, s.Repeat.Jitter
		}
		var gate *trigger.Trigger
		if s.When != nil {
			t := s.When.Scaled(TriggerID(i), timeScale)
			gate = &t
		}
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(i)))
		for k := range count {
			at := s.At + dur.Duration(k)*every
			if d, ok := written.(interface{ delay() dur.Duration }); ok {
				at += d.delay()
			}
			if jitter > 0 {
				at += dur.Duration(rng.Int64N(int64(jitter) + 1))
			}
			in := Injection{Index: i, Repeat: k, Kind: s.Kind, At: at.Scale(timeScale), Trigger: gate, Params: params, Written: written}
			if params != nil {
				in.Window, in.Hold = params.window().D(), params.hold().D()
			}
			out = append(out, in)
		}
	}
	slices.SortStableFunc(out, func(a, b Injection) int { return cmp.Compare(a.At, b.At) })
	return out
}

// TriggerID names the trigger of the experiment's fault index.
func TriggerID(index int) string { return fmt.Sprintf("fault-%d", index) }

// PlanTriggers lists the distinct triggers of a plan, in the order of their
// faults in the experiment.
func PlanTriggers(plan []Injection) []trigger.Trigger {
	byIndex := map[int]trigger.Trigger{}
	for _, in := range plan {
		if in.Trigger != nil {
			byIndex[in.Index] = *in.Trigger
		}
	}
	out := make([]trigger.Trigger, 0, len(byIndex))
	for _, i := range slices.Sorted(maps.Keys(byIndex)) {
		out = append(out, byIndex[i])
	}
	return out
}

// atScale returns a copy of p with every duration multiplied by the time
// scale f. Every [dur.Duration] field of a params struct is a span of the
// fault's effect, so a new kind's durations scale without a line of its
// own; counts, sizes, rates and statuses are not time and stay as written.
func atScale(p Params, f float64) Params {
	v := reflect.New(reflect.TypeOf(p).Elem())
	v.Elem().Set(reflect.ValueOf(p).Elem())
	dur.ScaleAll(v.Interface(), f)
	return v.Interface().(Params)
}

package client

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Options are the naive and resumable clients' settings as an
// experiment's client: block states them. The protocol, the tasks mode and
// the seed are the experiment's, not options.
type Options struct {
	// Cursor is where the resumable client keeps its Last-Event-ID:
	// memory or file (durable across its restarts).
	Cursor  string  `yaml:"cursor" json:"cursor"`
	Backoff Backoff `yaml:"backoff" json:"backoff"`
	// ReadTimeout treats a stream silent this long as broken; 0 waits
	// forever.
	ReadTimeout dur.Duration `yaml:"read_timeout" json:"read_timeout"`

	target string // naive or resumable: which client the options are for
}

// Backoff bounds reconnection: the first delay and the cap (0 takes the
// default), and how many attempts before giving up.
type Backoff struct {
	Initial dur.Duration `yaml:"initial" json:"initial"`
	Max     dur.Duration `yaml:"max" json:"max"`
	Retries int          `yaml:"retries" json:"retries"`
}

// The defaults of Options.
const (
	DefaultBackoffInitial = time.Second
	DefaultBackoffMax     = 30 * time.Second
	DefaultBackoffRetries = 8
	// MaxBackoffRetries bounds backoff.retries.
	MaxBackoffRetries = 1000
)

// DefaultOptions returns the options of the target (naive or resumable)
// for what an experiment leaves out.
func DefaultOptions(target string) *Options {
	return &Options{Cursor: CursorMemory, Backoff: Backoff{Retries: DefaultBackoffRetries}, target: target}
}

// Validate checks every setting.
func (o *Options) Validate() error {
	r := o.resolved()
	var errs []error
	if cursors := []string{CursorMemory, CursorFile}; !slices.Contains(cursors, r.Cursor) {
		errs = append(errs, field.Errorf("cursor", "must be one of %s, got %q", strings.Join(cursors, ", "), r.Cursor))
	}
	if r.target == TargetNaive && r.Cursor == CursorFile {
		errs = append(errs, field.Errorf("cursor", "the naive client keeps no cursor; use the resumable client for a file cursor"))
	}
	if b := r.Backoff; b.Max < b.Initial {
		errs = append(errs, field.Errorf("backoff.max", "must be at least backoff.initial (%s), got %s", b.Initial, b.Max))
	}
	if n := r.Backoff.Retries; n < 0 || n > MaxBackoffRetries {
		errs = append(errs, field.Errorf("backoff.retries", "must be between 0 and %d, got %d", MaxBackoffRetries, n))
	}
	return errors.Join(errs...)
}

// resolved gives a backoff delay of 0 its default.
func (o Options) resolved() Options {
	if o.Backoff.Initial == 0 {
		o.Backoff.Initial = dur.Duration(DefaultBackoffInitial)
	}
	if o.Backoff.Max == 0 {
		o.Backoff.Max = dur.Duration(DefaultBackoffMax)
	}
	return o
}

// Scaled returns the options at time scale f.
func (o *Options) Scaled(f float64) targets.Options {
	c := o.resolved()
	dur.ScaleAll(&c, f)
	return &c
}

// Apply sets what the options say in w, the options every client of the
// agent shares.
func (o *Options) Apply(w *workload.Options) {
	w.Cursor = o.Cursor
	w.Backoff = workload.Backoff{Initial: o.Backoff.Initial.D(), Max: o.Backoff.Max.D(), Retries: o.Backoff.Retries}
	w.ReadTimeout = o.ReadTimeout.D()
}

// The naive and the resumable client as targets. Both speak every
// revision; the resumable one speaks both task modes.
var (
	NaiveDescriptor = targets.Client{
		Name:      targets.Naive,
		Options:   func() targets.Options { return DefaultOptions(TargetNaive) },
		Protocols: protocols(),
		Records:   history.File,
	}
	ResumableDescriptor = targets.Client{
		Name:      targets.Resumable,
		Options:   func() targets.Options { return DefaultOptions(TargetResumable) },
		Protocols: protocols(),
		TaskModes: []string{TasksExtension, TasksLegacy},
		Records:   history.File,
	}
)

func protocols() []string { return append(slices.Clone(mcp.Versions), mcp.Version20260728) }

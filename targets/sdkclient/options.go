package sdkclient

import (
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// Options are an SDK client's settings as an experiment's client: block
// states them: only how many times it reconnects. The SDKs keep their
// delays and cursors to themselves.
type Options struct {
	Backoff Backoff `yaml:"backoff" json:"backoff"`
}

// Backoff is how many reconnection attempts the SDK makes.
type Backoff struct {
	Retries int `yaml:"retries" json:"retries"`
}

// Bounds of Options.
const (
	DefaultRetries = 8
	MaxRetries     = 1000
)

// DefaultOptions returns the options for what an experiment leaves out.
func DefaultOptions() *Options { return &Options{Backoff: Backoff{Retries: DefaultRetries}} }

// Validate checks the retries.
func (o *Options) Validate() error {
	if n := o.Backoff.Retries; n < 0 || n > MaxRetries {
		return field.Errorf("backoff.retries", "must be between 0 and %d, got %d", MaxRetries, n)
	}
	return nil
}

// Scaled returns a copy: the options hold no duration.
func (o *Options) Scaled(f float64) targets.Options {
	c := *o
	dur.ScaleAll(&c, f)
	return &c
}

// Apply sets the retries in w.
func (o *Options) Apply(w *workload.Options) { w.Backoff.Retries = o.Backoff.Retries }

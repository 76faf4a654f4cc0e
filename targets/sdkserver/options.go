package sdkserver

import (
	"errors"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
)

// Options are an SDK server's settings as an experiment's server: block
// states them: what the SDK lets a server bound, its event retention and
// its idle session TTL (each adapter says how it maps them onto the SDK).
type Options struct {
	// RetentionEvents bounds the events kept for resumption; 0 is
	// unbounded (the SDK's own default).
	RetentionEvents int `yaml:"retention_events" json:"retention_events"`
	// SessionTTL closes a session idle this long; 0 never does.
	SessionTTL dur.Duration `yaml:"session_ttl" json:"session_ttl"`
}

// DefaultOptions returns the options for what an experiment leaves out:
// the reference server's defaults, so that an experiment moved from one
// server to another keeps its bounds.
func DefaultOptions() *Options {
	return &Options{RetentionEvents: 1000, SessionTTL: dur.Duration(10 * time.Minute)}
}

// Validate checks the retention.
func (o *Options) Validate() error {
	var errs []error
	if o.RetentionEvents < 0 {
		errs = append(errs, field.Errorf("retention_events", "must be 0 (unbounded) or more, got %d", o.RetentionEvents))
	}
	return errors.Join(errs...)
}

// Scaled returns the options at time scale f.
func (o *Options) Scaled(f float64) targets.Options {
	c := *o
	dur.ScaleAll(&c, f)
	return &c
}

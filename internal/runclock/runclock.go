// Package runclock is the one base clock a run is measured on.
//
// Every process of an experiment (runner, agents, fault injector) records
// times as offsets from the same base instant, so client operations, server
// observations and fault windows line up on one timeline. The base is passed
// between processes as Unix nanoseconds; offsets use the wall clock (the
// monotonic reading is stripped) so that every process computes the same
// offset for the same instant.
package runclock

import (
	"context"
	"strconv"
	"time"
)

// Clock measures offsets from a base instant.
type Clock struct {
	base time.Time
}

// New returns a clock whose zero is base.
func New(base time.Time) Clock {
	return Clock{base: base.Round(0)}
}

// Start returns a clock whose zero is now.
func Start() Clock { return New(time.Now()) }

// FromUnixNano returns the clock whose base is the given Unix time in
// nanoseconds, as handed to a child process.
func FromUnixNano(n int64) Clock { return New(time.Unix(0, n)) }

// ParseUnixNano parses the decimal form produced by [Clock.String].
func ParseUnixNano(s string) (Clock, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return Clock{}, err
	}
	return FromUnixNano(n), nil
}

// Base is the clock's zero instant.
func (c Clock) Base() time.Time { return c.base }

// UnixNano is the base as Unix nanoseconds, the form passed to children.
func (c Clock) UnixNano() int64 { return c.base.UnixNano() }

// String is the base as decimal Unix nanoseconds.
func (c Clock) String() string { return strconv.FormatInt(c.base.UnixNano(), 10) }

// Now is the offset of the current instant from the base.
func (c Clock) Now() time.Duration { return time.Now().Round(0).Sub(c.base) }

// Micros is [Clock.Now] in whole microseconds, the unit of every t_us field.
func (c Clock) Micros() int64 { return c.Now().Microseconds() }

// At converts an offset back to an absolute instant.
func (c Clock) At(offset time.Duration) time.Time { return c.base.Add(offset) }

// Sleep waits d, or until ctx ends, whichever is first, and returns ctx's
// error in the second case. A d of zero or less returns at once with ctx's
// error, if any.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SleepUntil waits until the clock reads at, or until ctx ends; it reports
// whether the time came.
func (c Clock) SleepUntil(ctx context.Context, at time.Duration) bool {
	return Sleep(ctx, at-c.Now()) == nil
}

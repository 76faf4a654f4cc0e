// Package field is the error a part of chaosrun returns when one of its
// settings is wrong: the setting's name as an experiment file spells it
// ("idle", "backoff.max") beside what is wrong with it. A part validates
// its own options (a fault's params, a target's options) and returns these;
// the experiment loader places each at its file, line and column by the
// field, without reading it back out of a message.
package field

import (
	"errors"
	"fmt"
)

// Error is a problem with one setting. Field is its path within the
// options that were validated, dot-separated ("backoff.max"); "" when the
// problem concerns the options as a whole.
type Error struct {
	Field string
	Err   error
}

// Errorf returns an *Error on field with a formatted message.
func Errorf(field, format string, args ...any) error {
	return &Error{Field: field, Err: fmt.Errorf(format, args...)}
}

// Error is "field: message", or the message alone for no field.
func (e *Error) Error() string {
	if e.Field == "" {
		return e.Err.Error()
	}
	return e.Field + ": " + e.Err.Error()
}

// Unwrap returns the problem itself.
func (e *Error) Unwrap() error { return e.Err }

// All returns every problem err holds, as field errors: the errors joined
// in err (errors.Join) one by one, and an error that names no field as one
// on no field. It returns nil for a nil err.
func All(err error) []*Error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			out = append(out, All(e)...)
		}
		return out
	}
	var fe *Error
	if errors.As(err, &fe) {
		return []*Error{fe}
	}
	return []*Error{{Err: err}}
}

// In places every problem of err under parent: a problem on "max" becomes
// one on "backoff.max", one on no field one on "backoff". It returns nil
// for a nil err.
func In(parent string, err error) error {
	all := All(err)
	if all == nil {
		return nil
	}
	out := make([]error, len(all))
	for i, e := range all {
		out[i] = &Error{Field: Join(parent, e.Field), Err: e.Err}
	}
	return errors.Join(out...)
}

// Join joins two parts of a field path; either may be empty.
func Join(parent, child string) string {
	switch {
	case parent == "":
		return child
	case child == "":
		return parent
	}
	return parent + "." + child
}

// Package exitcode holds chaosrun's exit codes and the error that carries
// one through cobra, shared by the CLI and the agents (harness/roles), which
// a user's test binary runs too.
package exitcode

import (
	"errors"
	"fmt"
	"io"
)

// The exit codes, as the README documents them.
const (
	Met          = 0 // every expectation met
	NotMet       = 1 // some expectation not met
	Inconclusive = 2 // some experiment inconclusive where a verdict was expected
	Invalid      = 3 // invalid input (experiment files, flags, result folders)
	Harness      = 4 // the harness itself failed
	// Interrupted is the shell's code for a process ended by SIGINT
	// (128 + 2): the run was interrupted, its results are partial.
	Interrupted = 130
)

// Error carries an exit code with its error.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// With wraps err with code; nil stays nil.
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Report writes err to w as "chaosrun: ..." and returns its exit code: its
// Error's, or Invalid for errors cobra itself raises (unknown flags, wrong
// argument counts). A nil err is Met.
func Report(w io.Writer, err error) int {
	if err == nil {
		return Met
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Err != nil && e.Err.Error() != "" {
			fmt.Fprintln(w, "chaosrun:", e.Err)
		}
		return e.Code
	}
	fmt.Fprintln(w, "chaosrun:", err)
	return Invalid
}

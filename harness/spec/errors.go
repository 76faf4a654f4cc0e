package spec

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every validation failure, so callers can tell bad
// input (exit code 3) from a harness failure.
var ErrInvalid = errors.New("invalid experiment")

// Problem is one thing wrong with an experiment file, located by file, line,
// column and field path (e.g. "faults[0].params.idle").
type Problem struct {
	File  string
	Line  int
	Col   int
	Field string
	Msg   string
}

func (p Problem) String() string {
	loc := p.File
	switch {
	case p.Line > 0 && p.Col > 0:
		loc = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
	case p.Line > 0:
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Field == "" {
		return fmt.Sprintf("%s: %s", loc, p.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, p.Field, p.Msg)
}

// Error lists every problem found in one or more files.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *Error) Unwrap() error { return ErrInvalid }

// problems collects Problems for one file.
type problems struct {
	file string
	list []Problem
}

func (ps *problems) add(line, col int, field, format string, args ...any) {
	ps.list = append(ps.list, Problem{File: ps.file, Line: line, Col: col, Field: field, Msg: fmt.Sprintf(format, args...)})
}

func (ps *problems) err() error {
	if len(ps.list) == 0 {
		return nil
	}
	return &Error{Problems: ps.list}
}

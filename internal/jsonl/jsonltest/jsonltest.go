// Package jsonltest is the table of damaged files that every reader of
// chaosrun's JSON-lines files must read alike: the rule of package jsonl,
// as inputs and outcomes. A reader's test runs each [Case] with a whole
// record of the reader's kind and checks its outcome with [Case.Check], so
// two readers that disagree on the same torn input cannot both pass.
package jsonltest

import (
	"fmt"
	"strings"
)

// Record stands in a case's lines for a whole record of the reader's kind.
const Record = "<record>"

// Case is one file and what every reader makes of it.
type Case struct {
	Name string
	// Lines are the file's lines without their newlines: Record, or the
	// bytes written there.
	Lines []string
	// Unterminated: the last line has no newline.
	Unterminated bool
	// Kept is how many records a reader returns; when ErrLine is not 0,
	// the reader fails instead, naming line ErrLine.
	Kept    int
	ErrLine int
}

// Cases are the damaged files, and the whole ones they are told from.
var Cases = []Case{
	{Name: "empty file", Lines: nil, Kept: 0},
	{Name: "whole file", Lines: []string{Record, Record}, Kept: 2},
	{Name: "blank lines skipped", Lines: []string{"", Record, "  ", Record, ""}, Kept: 2},
	{Name: "last record without its newline", Lines: []string{Record, Record}, Unterminated: true, Kept: 2},
	{Name: "torn last line dropped", Lines: []string{Record, `{"n":2,"t_`}, Unterminated: true, Kept: 1},
	{Name: "torn last line of one byte dropped", Lines: []string{Record, `{`}, Unterminated: true, Kept: 1},
	{Name: "zeros after the last record dropped", Lines: []string{Record, "\x00\x00\x00\x00"}, Unterminated: true, Kept: 1},
	{Name: "torn line in the middle", Lines: []string{Record, `{"n":2,"t_`, Record}, ErrLine: 2},
	{Name: "torn line before a blank last line", Lines: []string{Record, `{"n":2,"t_`, ""}, ErrLine: 2},
	{Name: "bad last line with its newline", Lines: []string{Record, "{oops"}, ErrLine: 2},
	{Name: "whole JSON value that is no record, last", Lines: []string{Record, "[1]"}, Unterminated: true, ErrLine: 2},
}

// Input is the case's file, with record for every Record line.
func (c Case) Input(record string) string {
	var b strings.Builder
	for i, l := range c.Lines {
		if l == Record {
			l = record
		}
		b.WriteString(l)
		if i < len(c.Lines)-1 || !c.Unterminated {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// Check says how a reader's outcome, the records it returned and its
// error, differs from the case's; nil when it does not.
func (c Case) Check(kept int, err error) error {
	if c.ErrLine != 0 {
		want := fmt.Sprintf("line %d:", c.ErrLine)
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("%s: want an error naming %q, got %v (%d records)", c.Name, want, err, kept)
		}
		return nil
	}
	if err != nil || kept != c.Kept {
		return fmt.Errorf("%s: want %d records, got %d (error %v)", c.Name, c.Kept, kept, err)
	}
	return nil
}

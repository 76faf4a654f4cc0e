// Package jsonl reads and appends to files of one JSON object per line, the
// form of every record chaosrun keeps (history, ledger, wire, fault log, task
// journal), with the one rule they share for a crash.
//
// A writer appends a record and its newline with one write, so a writer
// killed in the middle of a write leaves at most one torn line, the last,
// with no newline: a prefix of a record, which is never a whole JSON value,
// or the zeros a killed [appendlog] keeps past its last record. That line is
// dropped. Any other line that does not parse (a torn line in the middle, a
// bad line with its newline, or a whole JSON value that is not a record of
// the file's kind, last or not) is corruption, and an error naming its line.
// A whole record on the last line without a newline is a record.
//
// A writer that reopens a file to append to it ([OpenAppend]) first ends a
// final line a killed writer left, so that a torn line never ends up in the
// middle of the file.
//
// [appendlog]: github.com/chaosrun/chaosrun/internal/appendlog
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrLineTooLong is returned for a line over the reader's bound.
var ErrLineTooLong = errors.New("line too long")

// Reader reads the record lines of a file one at a time, under the rule.
type Reader struct {
	br      *bufio.Reader
	maxLine int
	line    int
}

// NewReader reads r, whose lines may be up to maxLine bytes long.
func NewReader(r io.Reader, maxLine int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine}
}

// Next calls parse with the next non-blank line's 1-based number and its
// bytes (without surrounding white space; only valid during the call). It
// returns io.EOF at the end of the input, a torn last line dropped; a parse
// error of any other line, or a line longer than maxLine bytes, wrapped
// with the line's number ("line 7: ...").
func (r *Reader) Next(parse func(line int, b []byte) error) error {
	for {
		r.line++
		b, err := readLine(r.br, r.maxLine)
		if err == io.EOF {
			return io.EOF
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", r.line, err)
		}
		last := !bytes.HasSuffix(b, []byte{'\n'})
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		err = parse(r.line, b)
		switch {
		case err == nil:
			return nil
		case last && Torn(b):
			return io.EOF
		}
		return fmt.Errorf("line %d: %w", r.line, err)
	}
}

// Each calls parse for every record line of r, under the rule (see
// [Reader.Next]), and returns the first error.
func Each(r io.Reader, maxLine int, parse func(line int, b []byte) error) error {
	jr := NewReader(r, maxLine)
	for {
		if err := jr.Next(parse); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
}

// Read returns the records of r, each record line turned into one by
// parse, under the rule (see [Reader.Next]).
func Read[T any](r io.Reader, maxLine int, parse func(b []byte) (T, error)) ([]T, error) {
	var out []T
	err := Each(r, maxLine, func(_ int, b []byte) error {
		v, err := parse(b)
		if err != nil {
			return err
		}
		out = append(out, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Load reads the file at path with read; an error names the file.
func Load[T any](path string, read func(io.Reader) ([]T, error)) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs, err := read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// Torn reports whether b, the last line of a file with no newline after
// it, is what a writer killed in the middle of a write leaves: not a whole
// JSON value.
func Torn(b []byte) bool { return !json.Valid(b) }

// readLine returns the next line with its newline, or without one at the end
// of the input; io.EOF only when nothing is left.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, maxLine)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) > 0:
			return buf, nil
		}
		return buf, err
	}
}

// OpenAppend opens path for appending records, creating it if need be,
// and ends the final line a killed writer may have left without its
// newline: a torn line is cut off, a whole one gets its newline. What is
// appended then starts a line of its own, and the file reads as it did.
// The file's offset is at its start, for reading what is there.
func OpenAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	if err := endLastLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil { // an append moved it
		f.Close()
		return nil, err
	}
	return f, nil
}

// endLastLine cuts off or terminates the bytes after f's last newline.
func endLastLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	end := st.Size()
	start, err := lastLineStart(f, end)
	if err != nil || start == end {
		return err
	}
	tail := make([]byte, end-start)
	if _, err := f.ReadAt(tail, start); err != nil {
		return err
	}
	if tail = bytes.TrimSpace(tail); len(tail) == 0 || Torn(tail) {
		return f.Truncate(start)
	}
	_, err = f.Write([]byte{'\n'})
	return err
}

// lastLineStart returns the offset just past the last newline of f's first
// end bytes, 0 when there is none.
func lastLineStart(f *os.File, end int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for off := end; off > 0; {
		n := min(int64(len(buf)), off)
		off -= n
		if _, err := f.ReadAt(buf[:n], off); err != nil {
			return 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return off + int64(i) + 1, nil
		}
	}
	return 0, nil
}

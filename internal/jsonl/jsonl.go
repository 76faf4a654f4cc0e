// Package jsonl reads files of one JSON object per line, the form of every
// record chaosrun keeps (history, ledger, wire, fault log), with the one rule
// they share for a crash: a final line without a newline that does not
// parse was torn by the writer's death and is dropped, while a bad line
// anywhere else is an error naming its number.
package jsonl

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned for a line over the reader's bound.
var ErrLineTooLong = errors.New("line too long")

// Each calls parse for every non-blank line of r with its 1-based number and
// its bytes (without surrounding white space; only valid during the call).
// A parse error on the last line, when that line has no newline, ends the
// read without error (a torn write); any other parse error, or a line longer
// than maxLine bytes, is returned wrapped with its line number.
func Each(r io.Reader, maxLine int, parse func(line int, b []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := readLine(br, maxLine)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
		torn := !bytes.HasSuffix(b, []byte{'\n'})
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		if err := parse(line, b); err != nil {
			if torn {
				return nil
			}
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
}

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

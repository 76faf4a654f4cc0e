package sideeffects

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
)

// LedgerFile is the name of the exported ledger in a result folder.
const LedgerFile = "ledger.jsonl"

// maxLine bounds one line of a ledger file; a record is far smaller.
const maxLine = 4 << 20

// WriteLedger writes recs to w as JSON lines, in the order given.
func WriteLedger(w io.Writer, recs []Record) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	enc := json.NewEncoder(bw) // the same bytes as the store's log lines
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			return fmt.Errorf("ledger export: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("ledger export: %w", err)
	}
	return nil
}

// ReadLedger parses a ledger export (or the store's own log, which has the
// same format) and returns its records in N order. Blank lines are skipped.
// A malformed or invalid line is an error naming its line number, except a
// final line without a newline that does not parse: that is a write torn by
// a crash, and it is dropped.
func ReadLedger(r io.Reader) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var out []Record
	for line := 1; ; line++ {
		b, err := readLine(br)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", line, err)
		}
		torn := !bytes.HasSuffix(b, []byte{'\n'})
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		rec, err := parseLine(b)
		if err != nil && torn {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("ledger line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	slices.SortStableFunc(out, func(a, b Record) int { return cmp.Compare(a.N, b.N) })
	return out, nil
}

// readLine returns the next line with its newline, or without one at the end
// of the input; io.EOF only when nothing is left.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxLine)
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF && len(buf) > 0:
			return buf, nil
		default:
			return buf, err
		}
	}
}

func parseLine(b []byte) (Record, error) {
	var rec Record
	if err := json.Unmarshal(b, &rec); err != nil {
		return Record{}, err
	}
	if err := rec.Validate(); err != nil {
		return Record{}, err
	}
	return rec, nil
}

// LoadLedger reads a ledger.jsonl file; see [ReadLedger].
func LoadLedger(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	recs, err := ReadLedger(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// SaveLedger writes recs to path as ledger.jsonl.
func SaveLedger(path string, recs []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if err := WriteLedger(f, recs); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

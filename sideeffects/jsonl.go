package sideeffects

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/chaosrun/chaosrun/internal/jsonl"
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
// same format) and returns its records in N order, under the rule of
// package internal/jsonl: blank lines are skipped, a torn last line (a
// crash's, or the zeros a killed store keeps past its records) is dropped,
// and any other malformed or invalid line is an error naming its number.
func ReadLedger(r io.Reader) ([]Record, error) {
	recs, err := jsonl.Read(r, maxLine, parseLine)
	if err != nil {
		return nil, fmt.Errorf("ledger %w", err)
	}
	slices.SortStableFunc(recs, func(a, b Record) int { return cmp.Compare(a.N, b.N) })
	return recs, nil
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
func LoadLedger(path string) ([]Record, error) { return jsonl.Load(path, ReadLedger) }

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

package faults

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/chaosrun/chaosrun/internal/jsonl"
)

// Entry is one injection in faults.jsonl: what was injected, on what, and
// the window it was active, in microseconds on the run's base clock. EndUS
// is when the fault was healed (or the run ended with it still active).
type Entry struct {
	Index   int            `json:"index"` // position in the experiment's faults list
	Repeat  int            `json:"repeat,omitempty"`
	Kind    string         `json:"kind"`
	Target  string         `json:"target"`
	Params  map[string]any `json:"params,omitempty"`
	StartUS int64          `json:"start_us"`
	EndUS   int64          `json:"end_us"`
	Detail  string         `json:"detail,omitempty"`
	// Trigger describes the protocol trigger the injection waited for, and
	// FiredBy and FiredUS what fired it and when, on the run's clock.
	Trigger string `json:"trigger,omitempty"`
	FiredBy string `json:"fired_by,omitempty"`
	FiredUS int64  `json:"fired_us,omitempty"`
	// Error is set when the injection failed: the fault never acted.
	Error string `json:"error,omitempty"`
	// HealError is set when the fault acted but undoing it failed.
	HealError string `json:"heal_error,omitempty"`

	stops bool     // the injection stops its target (Event.Stops); not logged
	_     struct{} // keyed literals only: the entry grows
}

// Log appends entries to faults.jsonl. It is safe for concurrent use.
type Log struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// NewLog writes entries to w.
func NewLog(w io.Writer) *Log { return &Log{w: w} }

// CreateLog creates (truncates) the fault log at path.
func CreateLog(path string) (*Log, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("fault log: %w", err)
	}
	return &Log{w: f, c: f}, nil
}

// Write appends one entry.
func (l *Log) Write(e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("fault log: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(b, '\n'))
	return err
}

// Close closes the file, if the log opened one.
func (l *Log) Close() error {
	if l.c == nil {
		return nil
	}
	return l.c.Close()
}

// LoadLog reads a fault log.
func LoadLog(path string) ([]Entry, error) {
	entries, err := jsonl.Load(path, ReadLog)
	if err != nil {
		return nil, fmt.Errorf("fault log: %w", err)
	}
	return entries, nil
}

// ReadLog reads the entries of a fault log under the rule every JSON-lines
// reader of chaosrun applies (internal/jsonl): a torn last line, what a
// runner killed in the middle of a write leaves, is dropped; any other bad
// line is an error naming it.
func ReadLog(r io.Reader) ([]Entry, error) {
	return jsonl.Read(r, 4<<20, func(b []byte) (Entry, error) {
		var e Entry
		err := json.Unmarshal(b, &e)
		return e, err
	})
}

package history

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/chaosrun/chaosrun/internal/jsonl"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

// Writer appends records to a history file. It stamps t_us from its clock
// when a record has none, and is safe for concurrent use by the logical
// clients of one process. Every record is written through to the file
// before Write returns, so a client killed with SIGKILL loses nothing it
// reported.
type Writer struct {
	mu    sync.Mutex
	w     io.Writer
	c     io.Closer
	clock runclock.Clock
}

// NewWriter writes records to w.
func NewWriter(w io.Writer, clock runclock.Clock) *Writer {
	return &Writer{w: w, clock: clock}
}

// Create opens path for appending (a restarted client continues the same
// history) and returns a writer on it. A torn last line a killed client
// left is cut off first, so that it does not end up in the middle of the
// file, where it would be corruption.
func Create(path string, clock runclock.Clock) (*Writer, error) {
	f, err := jsonl.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	return &Writer{w: f, c: f, clock: clock}, nil
}

// Write appends one record, stamping its time if it has none.
func (w *Writer) Write(r Record) error {
	if r.TUS == 0 {
		r.TUS = w.clock.Micros()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.w.Write(b); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}

// Close closes the underlying file, if the writer opened one.
func (w *Writer) Close() error {
	if w.c == nil {
		return nil
	}
	return w.c.Close()
}

// maxLine bounds one line of a history file; a record is far smaller.
const maxLine = 16 << 20

// Read parses a history stream under the rule of package internal/jsonl:
// blank lines are skipped, a torn last line (a crash's) is dropped, and any
// other malformed line is an error naming its number.
func Read(r io.Reader) ([]Record, error) {
	recs, err := jsonl.Read(r, maxLine, func(b []byte) (rec Record, err error) {
		err = json.Unmarshal(b, &rec)
		return rec, err
	})
	if err != nil {
		return nil, fmt.Errorf("history %w", err)
	}
	return recs, nil
}

// Load reads a history file.
func Load(path string) ([]Record, error) { return jsonl.Load(path, Read) }

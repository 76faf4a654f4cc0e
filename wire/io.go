package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/chaosrun/chaosrun/internal/jsonl"
)

// maxLine bounds one line of wire.jsonl: a record keeps at most
// MaxArgsBytes of arguments and MaxErrorBody of an error body, escaped.
const maxLine = 4 << 20

// minFree is the free space below which Writer.Write flushes before it
// encodes a record: more than most records take.
const minFree = 4 << 10

// Writer appends records to wire.jsonl, numbering them from 1 (or as one
// [Share] of the run's wire, see [NewShareWriter]). It buffers;
// [Writer.Flush] and [Writer.Close] write the buffer out. It is safe for
// concurrent use.
type Writer struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	buf bytes.Buffer  // one encoded record
	enc *json.Encoder // encodes into buf the records appendRecord leaves to encoding/json
	c   io.Closer
	n   int64 // records written
	// share numbers the records of one of several writers of a run.
	share Share
	err   error // the first write error; later writes return it
}

// NewWriter writes records to w.
func NewWriter(w io.Writer) *Writer {
	wr := &Writer{bw: bufio.NewWriterSize(w, 64<<10)}
	wr.enc = json.NewEncoder(&wr.buf)
	return wr
}

// Create creates (truncates) the file at path and returns a writer on it.
func Create(path string) (*Writer, error) { return CreateShare(path, Share{}) }

// CreateShare is [Create] for a writer that numbers its records as share s.
func CreateShare(path string, s Share) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("wire: %w", err)
	}
	w := NewShareWriter(f, s)
	w.c = f
	return w, nil
}

// Write numbers r (setting r.N) and appends it. It returns the number.
func (w *Writer) Write(r *Record) (int64, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	w.n++
	r.N = w.share.Nth(w.n)
	// A record is encoded straight into the buffer's free space, which
	// Write then takes without a copy.
	if w.bw.Available() < minFree && w.bw.Buffered() > 0 {
		if err := w.bw.Flush(); err != nil {
			w.err = fmt.Errorf("wire: %w", err)
			return 0, w.err
		}
	}
	b, ok := appendRecord(w.bw.AvailableBuffer(), r)
	if ok {
		b = append(b, '\n')
	} else {
		w.buf.Reset()
		if err := w.enc.Encode(r); err != nil { // the JSON of json.Marshal, and a newline
			w.n--
			return 0, fmt.Errorf("wire: %w", err)
		}
		b = w.buf.Bytes()
	}
	if _, err := w.bw.Write(b); err != nil {
		w.err = fmt.Errorf("wire: %w", err)
		return 0, w.err
	}
	return r.N, nil
}

// Flush writes buffered records out.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("wire: %w", err)
	}
	return w.err
}

// Close flushes and closes the file, if the writer opened one. It is
// idempotent.
func (w *Writer) Close() error {
	err := w.Flush()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.c != nil {
		err = errors.Join(err, w.c.Close())
		w.c = nil
	}
	return err
}

// Read parses wire.jsonl. Blank lines are skipped; a malformed line is an
// error naming its line, except a final line without a newline that does not
// parse: a write torn by a crash, which is dropped.
func Read(r io.Reader) ([]Record, error) {
	recs, err := jsonl.Read(r, maxLine, func(b []byte) (rec Record, err error) {
		if err := json.Unmarshal(b, &rec); err != nil {
			return rec, err
		}
		if !rec.Kind.Valid() {
			return rec, fmt.Errorf("unknown kind %q", rec.Kind)
		}
		return rec, nil
	})
	if err != nil {
		return nil, fmt.Errorf("wire: %w", err)
	}
	return recs, nil
}

// Load reads a wire.jsonl file.
func Load(path string) ([]Record, error) { return jsonl.Load(path, Read) }

// Save writes recs to path as wire.jsonl, keeping their numbers.
func Save(path string, recs []Record) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("wire: %w", err)
	}
	bw := bufio.NewWriterSize(f, 64<<10)
	enc := json.NewEncoder(bw)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			f.Close()
			return fmt.Errorf("wire: %w", err)
		}
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("wire: %w", err)
	}
	return f.Close()
}

// Package appendlog is a durable append-only log of newline-terminated
// records with group commit.
//
// It backs the ledger store and the reference server's file event store. An
// append returns only after its bytes are written and, unless the log was
// opened with NoSync, fsync'd; concurrent appends share one fsync (group
// commit), so many writers cost about one disk flush per batch rather than
// one per record. On open, a torn final record left by a crash (bytes after
// the last newline) is truncated away and every complete record is replayed.
package appendlog

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
)

// ErrClosed is returned by Append after Close.
var ErrClosed = errors.New("appendlog: closed")

// Options tune a log. The zero value is durable.
type Options struct {
	// NoSync skips fsync. Appends are still written before they return, so
	// they survive a process kill but not a machine crash.
	NoSync bool
}

// Log is an open append-only log. It is safe for concurrent use.
type Log struct {
	f      *os.File
	noSync bool

	mu      sync.Mutex
	cond    *sync.Cond
	pending [][]byte
	waiters []chan error
	closed  bool
	done    chan struct{}
}

// Open opens or creates the log at path, calls replay for every complete
// record in order (without its trailing newline), truncates a torn tail, and
// starts the committer. A replay error aborts the open.
func Open(path string, opts Options, replay func(record []byte) error) (*Log, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("appendlog: open: %w", err)
	}
	good, err := scan(f, replay)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("appendlog: truncate torn tail: %w", err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("appendlog: seek: %w", err)
	}
	l := &Log{f: f, noSync: opts.NoSync, done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	go l.commit()
	return l, nil
}

// scan replays complete records and returns the offset just past the last one.
func scan(f *os.File, replay func([]byte) error) (int64, error) {
	r := bufio.NewReaderSize(f, 64<<10)
	var good int64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return good, nil // bytes without a newline are a torn tail
		}
		if err != nil {
			return 0, fmt.Errorf("appendlog: read: %w", err)
		}
		good += int64(len(line))
		rec := bytes.TrimSuffix(line, []byte{'\n'})
		if len(rec) == 0 || replay == nil {
			continue
		}
		if err := replay(rec); err != nil {
			return 0, fmt.Errorf("appendlog: replay record ending at byte %d: %w", good, err)
		}
	}
}

// Append writes one record durably. The record must not contain a newline.
func (l *Log) Append(record []byte) error {
	return l.AppendBatch([][]byte{record})
}

// AppendBatch writes records durably, in order and with one write, and
// returns once all of them are on disk: one waiter for the batch, however many
// records it holds. No record may contain a newline; if one does, nothing is
// written. The batch shares its fsync with whatever else is pending.
func (l *Log) AppendBatch(records [][]byte) error {
	size := 0
	for _, r := range records {
		if bytes.IndexByte(r, '\n') >= 0 {
			return errors.New("appendlog: record contains a newline")
		}
		size += len(r) + 1
	}
	if size == 0 {
		return nil
	}
	buf := make([]byte, 0, size)
	for _, r := range records {
		buf = append(append(buf, r...), '\n')
	}
	ch := make(chan error, 1)
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	l.pending = append(l.pending, buf)
	l.waiters = append(l.waiters, ch)
	l.cond.Signal()
	l.mu.Unlock()
	return <-ch
}

// commit is the single writer: it takes everything pending, writes it with
// one write and one fsync, and answers every waiter of the batch.
func (l *Log) commit() {
	defer close(l.done)
	for {
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closed {
			l.cond.Wait()
		}
		if len(l.pending) == 0 && l.closed {
			l.mu.Unlock()
			return
		}
		batch, waiters := l.pending, l.waiters
		l.pending, l.waiters = nil, nil
		l.mu.Unlock()

		err := l.flush(batch)
		for _, w := range waiters {
			w <- err
		}
	}
}

func (l *Log) flush(batch [][]byte) error {
	if _, err := l.f.Write(bytes.Join(batch, nil)); err != nil {
		return fmt.Errorf("appendlog: write: %w", err)
	}
	if l.noSync {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		return fmt.Errorf("appendlog: fsync: %w", err)
	}
	return nil
}

// Close waits for pending appends to commit and closes the file. It is
// idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.done
		return nil
	}
	l.closed = true
	l.cond.Signal()
	l.mu.Unlock()
	<-l.done
	return l.f.Close()
}

// Package appendlog is a durable append-only log of newline-terminated
// records with group commit.
//
// It backs the ledger store and the reference server's file event store. An
// append returns only after its bytes are written and, unless the log was
// opened with NoSync, fsync'd; concurrent appends share one fsync (group
// commit), so many writers cost about one disk flush per batch rather than
// one per record. On open, a torn final record left by a crash (bytes after
// the last newline) is truncated away and every complete record is replayed.
//
// # Preallocation
//
// The file is kept zero-filled [growBy] bytes past its last record, and
// records overwrite those zeros. A flush then changes no file size, so it
// needs only fdatasync (the data, not the inode's times and size) where the
// system has it, and the file system journals nothing: on an ext4 disk that
// halves the time of a flush. Only a flush that grows the file past its
// zeros syncs in full, once per growBy bytes. Close trims the zeros; a log
// whose process was killed keeps them, and Open reads up to the first zero
// byte (a record never holds one) and trims the rest before it grows the
// file again. Readers of a killed log other than Open see the zeros as a
// final line without a newline, which is how they already see a torn write.
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

// growBy is how far past its last record the file is kept zero-filled; a
// variable so that tests can grow a log often.
var growBy int64 = 1 << 20

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
	end    int64 // offset just past the last record; only the committer moves it
	size   int64 // the file's size: zeros from end on
	broken error // the first failed write or sync; every later flush fails with it

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
	l := &Log{f: f, noSync: opts.NoSync, end: good, size: good, done: make(chan struct{})}
	if err := l.grow(good); err != nil {
		f.Close()
		return nil, err
	}
	if err := l.sync(true); err != nil {
		f.Close()
		return nil, err
	}
	l.cond = sync.NewCond(&l.mu)
	go l.commit()
	return l, nil
}

// grow zero-fills the file to growBy bytes past need, unless it already
// reaches past need.
func (l *Log) grow(need int64) error {
	if need < l.size {
		return nil
	}
	size := need + growBy
	for off := l.size; off < size; {
		n, err := l.f.WriteAt(zeros[:min(int64(len(zeros)), size-off)], off)
		off += int64(n)
		if err != nil {
			return fmt.Errorf("appendlog: preallocate: %w", err)
		}
	}
	l.size = size
	return nil
}

// zeros is what grow writes, a chunk at a time.
var zeros [64 << 10]byte

// sync makes what was written durable: in full (the file's size too) after
// the file grew, otherwise only its data.
func (l *Log) sync(grew bool) error {
	if l.noSync {
		return nil
	}
	var err error
	if grew {
		err = l.f.Sync()
	} else {
		err = datasync(l.f)
	}
	if err != nil {
		return fmt.Errorf("appendlog: fsync: %w", err)
	}
	return nil
}

// scan replays complete records and returns the offset just past the last
// one. A zero byte ends the records: from it on the file holds preallocated
// zeros or what a crash left unwritten.
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
		if bytes.IndexByte(line, 0) >= 0 {
			return good, nil
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

// Append writes one record durably. The record must not contain a newline or
// a zero byte.
func (l *Log) Append(record []byte) error {
	return l.AppendBatch([][]byte{record})
}

// AppendBatch writes records durably, in order and with one write, and
// returns once all of them are on disk: one waiter for the batch, however many
// records it holds. No record may contain a newline or a zero byte; if one
// does, nothing is written. The batch shares its fsync with whatever else is
// pending.
func (l *Log) AppendBatch(records [][]byte) error {
	size := 0
	for _, r := range records {
		if bytes.IndexByte(r, '\n') >= 0 {
			return errors.New("appendlog: record contains a newline")
		}
		if bytes.IndexByte(r, 0) >= 0 {
			return errors.New("appendlog: record contains a zero byte")
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

// flush writes batch over the zeros after the last record and syncs it.
// After a failed write or sync every later flush fails too: nothing tells
// which of the bytes reached the disk, and a later batch written over them
// could leave records of the failed one behind it.
func (l *Log) flush(batch [][]byte) (err error) {
	if l.broken != nil {
		return l.broken
	}
	defer func() { l.broken = err }()
	data := bytes.Join(batch, nil)
	size := l.size
	if err := l.grow(l.end + int64(len(data))); err != nil {
		return err
	}
	if _, err := l.f.WriteAt(data, l.end); err != nil {
		return fmt.Errorf("appendlog: write: %w", err)
	}
	if err := l.sync(l.size != size); err != nil {
		return err
	}
	l.end += int64(len(data))
	return nil
}

// Close waits for pending appends to commit, trims the preallocated zeros
// and closes the file. It is idempotent.
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
	err := l.f.Truncate(l.end)
	if err == nil {
		err = l.sync(true)
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appendlog: close: %w", err)
	}
	return nil
}

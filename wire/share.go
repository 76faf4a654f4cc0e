package wire

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"io"

	"github.com/chaosrun/chaosrun/internal/jsonl"
)

// Share is one of several writers of one run's wire: proxy agent Index of
// Of, each carrying a share of the clients. Its k-th record and its k-th
// connection on an edge are numbered (k-1)*Of + Index, so that the shares'
// numbers never meet and [Merge] can put their files into one wire.jsonl
// that keeps every number (and every trigger firing that cites one). The
// zero value, like {Index: 1, Of: 1}, numbers 1, 2, 3...
type Share struct {
	Index, Of int64
}

// Nth is the number of the k-th item (k from 1).
func (s Share) Nth(k int64) int64 {
	if s.Of <= 1 {
		return k
	}
	return (k-1)*s.Of + s.Index
}

// Valid reports whether s names one share of Of (or is the zero value).
func (s Share) Valid() bool {
	return s == Share{} || (s.Of >= 1 && s.Index >= 1 && s.Index <= s.Of)
}

// NewShareWriter writes records to w numbered as share s.
func NewShareWriter(w io.Writer, s Share) *Writer {
	wr := NewWriter(w)
	wr.share = s
	return wr
}

// Merge writes the records of several wire.jsonl files (the shares of one
// run) to dst as one, in the order of their t_us: each file's lines keep
// their order among themselves and are copied as they are, numbers
// included. A line that does not parse is an error naming its source and
// line, except a torn last line (see [Read]), which is dropped.
func Merge(dst io.Writer, srcs ...io.Reader) error {
	h := &heads{}
	for i, src := range srcs {
		c := &cursor{src: i, r: jsonl.NewReader(src, maxLine)}
		if err := c.next(); err != nil {
			return err
		}
		if c.line != nil {
			heap.Push(h, c)
		}
	}
	bw := bufio.NewWriterSize(dst, 64<<10)
	for h.Len() > 0 {
		c := (*h)[0]
		if _, err := bw.Write(c.line); err != nil {
			return fmt.Errorf("wire: merge: %w", err)
		}
		if err := c.next(); err != nil {
			return err
		}
		if c.line == nil {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("wire: merge: %w", err)
	}
	return nil
}

// cursor is the next line of one source of a merge.
type cursor struct {
	src  int
	r    *jsonl.Reader
	line []byte // with its newline; nil at the end
	tus  int64
}

// next reads the cursor's next record line; line is nil at the end.
func (c *cursor) next() error {
	err := c.r.Next(func(_ int, b []byte) error {
		var t struct {
			TUS  int64 `json:"t_us"`
			Kind Kind  `json:"kind"`
		}
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		if !t.Kind.Valid() {
			return fmt.Errorf("unknown kind %q", t.Kind)
		}
		c.line, c.tus = append(append(c.line[:0], b...), '\n'), t.TUS
		return nil
	})
	switch {
	case err == io.EOF:
		c.line = nil
	case err != nil:
		return fmt.Errorf("wire: merge: source %d, %w", c.src+1, err)
	}
	return nil
}

// heads orders the sources of a merge by their next line's t_us, then by
// source.
type heads []*cursor

func (h heads) Len() int { return len(h) }
func (h heads) Less(i, j int) bool {
	if h[i].tus != h[j].tus {
		return h[i].tus < h[j].tus
	}
	return h[i].src < h[j].src
}
func (h heads) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heads) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *heads) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

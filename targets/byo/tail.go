package byo

import (
	"bytes"
	"strings"
	"sync"
)

// tailLines is how many of a command's last lines its errors quote.
const tailLines = 10

// tailLineMax bounds one quoted line; a longer one is cut.
const tailLineMax = 512

// tail is an io.Writer that keeps the last lines written to it, so that a
// command that fails to start is reported with what it said, not only in a
// log file the user has to find.
type tail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			t.partial = appendBounded(t.partial, p)
			break
		}
		t.push(string(appendBounded(t.partial, p[:i])))
		t.partial, p = t.partial[:0], p[i+1:]
	}
	return n, nil
}

func appendBounded(dst, p []byte) []byte {
	if room := tailLineMax - len(dst); room < len(p) {
		p = p[:max(room, 0)]
	}
	return append(dst, p...)
}

func (t *tail) push(line string) {
	line = strings.TrimRight(line, "\r")
	if strings.TrimSpace(line) == "" {
		return
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

// Lines returns the last lines, an unfinished last line included.
func (t *tail) Lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if s := strings.TrimSpace(string(t.partial)); s != "" {
		out = append(out, s)
	}
	return out
}

// Said is the last lines as the tail of an error message ("; its last
// output: a | b"), or "" when the command printed nothing.
func (t *tail) Said() string {
	lines := t.Lines()
	if len(lines) == 0 {
		return "; it printed nothing"
	}
	return "; its last output: " + strings.Join(lines, " | ")
}

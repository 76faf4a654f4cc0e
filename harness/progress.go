package harness

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// progress writes one line per event, prefixed with the experiment and its
// clock, from experiments running in parallel.
type progress struct {
	mu sync.Mutex
	w  io.Writer
}

func newProgress(w io.Writer) *progress {
	if w == nil {
		w = io.Discard
	}
	return &progress{w: w}
}

func (p *progress) say(name string, clock runclock.Clock, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "[%s %6.2fs] %s\n", name, clock.Now().Seconds(), line)
}

func joinReasons(r []string) string { return strings.Join(r, "; ") }

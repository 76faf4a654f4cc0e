package harness

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

// progress writes one line per event, prefixed with the experiment and its
// clock, from experiments running in parallel, and says when each
// experiment starts which of the run's it is. On a terminal it also keeps a
// status line under them: how many experiments are done and running, and an
// estimate of the time left from their scheduled times.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	terminal bool
	plans    []*spec.Plan
	names    []string // what each plan's lines are prefixed with
	parallel int
	started  []time.Time // zero until the experiment starts
	finished []bool
	wall     time.Duration // of the finished experiments
	sched    time.Duration // their scheduled time
	status   string        // the status line on screen, "" if none
	stop     chan struct{}
	stopped  chan struct{}
}

// setupEstimate is about what an experiment costs beyond its scheduled time
// on the local runtime (starting agents, settling, judging), for estimates
// made before any experiment finished.
const setupEstimate = 700 * time.Millisecond

func newProgress(w io.Writer, terminal bool, plans []*spec.Plan, parallel int) *progress {
	if w == nil {
		w, terminal = io.Discard, false
	}
	p := &progress{w: w, terminal: terminal, plans: plans, parallel: max(parallel, 1),
		started: make([]time.Time, len(plans)), finished: make([]bool, len(plans))}
	for _, pl := range plans {
		p.names = append(p.names, pl.Experiment.Name)
	}
	if terminal {
		p.stop, p.stopped = make(chan struct{}), make(chan struct{})
		go p.tick()
	}
	return p
}

// tick redraws the status line every second, so its estimate counts down.
func (p *progress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.redraw()
			p.mu.Unlock()
		}
	}
}

func (p *progress) say(name string, clock runclock.Clock, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(fmt.Sprintf("[%s %6.2fs] %s", name, clock.Now().Seconds(), line))
}

// line writes one progress line, above the status line on a terminal.
func (p *progress) line(s string) {
	if p.status != "" {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = ""
	}
	fmt.Fprintln(p.w, s)
	p.redraw()
}

func (p *progress) start(i int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started[i] = time.Now()
	n := 0
	for _, s := range p.started {
		if !s.IsZero() {
			n++
		}
	}
	p.line(fmt.Sprintf("[%s] experiment %d of %d (scheduled %.1fs)", p.names[i], n, len(p.plans), p.plans[i].Scheduled.Seconds()))
}

func (p *progress) done(i int, wall time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finished[i] = true
	p.wall += wall
	p.sched += p.plans[i].Scheduled
	p.redraw()
}

// close removes the status line and stops its redrawing.
func (p *progress) close() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status != "" {
		fmt.Fprint(p.w, "\r\033[K")
		p.status = ""
	}
}

// redraw writes the status line; the caller holds mu.
func (p *progress) redraw() {
	if !p.terminal {
		return
	}
	done, running := 0, 0
	for i := range p.plans {
		switch {
		case p.finished[i]:
			done++
		case !p.started[i].IsZero():
			running++
		}
	}
	s := fmt.Sprintf("── %d of %d experiments done, %d running, about %s left", done, len(p.plans), running, p.left().Round(time.Second))
	fmt.Fprint(p.w, "\r\033[K"+s)
	p.status = s
}

// left estimates the time until the run ends: the scheduled time still ahead
// of every experiment not finished, stretched by what the finished ones took
// beyond theirs, spread over the parallel slots.
func (p *progress) left() time.Duration {
	var ahead time.Duration
	n := 0
	for i, plan := range p.plans {
		if p.finished[i] {
			continue
		}
		n++
		d := plan.Scheduled + setupEstimate
		if !p.started[i].IsZero() {
			d -= time.Since(p.started[i])
		}
		ahead += max(d, 0)
	}
	if p.sched > 0 {
		ahead = time.Duration(float64(ahead) * float64(p.wall) / float64(p.sched+setupEstimate*time.Duration(p.count())))
	}
	return ahead / time.Duration(min(p.parallel, max(n, 1)))
}

func (p *progress) count() int {
	n := 0
	for _, f := range p.finished {
		if f {
			n++
		}
	}
	return n
}

func joinReasons(r []string) string { return strings.Join(r, "; ") }

package harness

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/stretchr/testify/assert"
)

func plans(names ...string) []*spec.Plan {
	var out []*spec.Plan
	for _, n := range names {
		out = append(out, &spec.Plan{Experiment: &spec.Experiment{Name: n}, Scheduled: 10 * time.Second})
	}
	return out
}

func TestProgressSaysWhichExperimentOfTheRun(t *testing.T) {
	tests := []struct {
		name     string
		terminal bool
		status   bool
	}{
		{"plain lines", false, false},
		{"terminal", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			p := newProgress(&b, tc.terminal, plans("a", "b", "c"), 2)
			p.start(0)
			p.say("a", runclock.Start(), "workload: 1 client(s)")
			p.start(1)
			p.done(0, 12*time.Second)
			p.close()
			out := b.String()
			assert.Contains(t, out, "[a] experiment 1 of 3 (scheduled 10.0s)\n")
			assert.Contains(t, out, "[b] experiment 2 of 3")
			assert.Equal(t, tc.status, strings.Contains(out, "1 of 3 experiments done, 1 running, about "), out)
			assert.Equal(t, tc.status, strings.Contains(out, "\r\033[K"), "only a terminal has its status line redrawn")
		})
	}
}

func TestProgressEstimatesTheTimeLeft(t *testing.T) {
	p := newProgress(&bytes.Buffer{}, false, plans("a", "b", "c", "d"), 2)
	assert.InDelta(t, (2 * (10*time.Second + setupEstimate)).Seconds(), p.left().Seconds(), 0.01, "four 10 s experiments, two at a time")
	p.finished[0], p.finished[1] = true, true
	p.wall, p.sched = 2*(20*time.Second+2*setupEstimate), 20*time.Second
	assert.InDelta(t, (20*time.Second + 2*setupEstimate).Seconds(), p.left().Seconds(), 0.01, "the finished took twice their schedule: so will the rest")
}

func TestHealLinesDoNotRepeatTheInjection(t *testing.T) {
	ev := faults.Event{Phase: faults.PhaseInjected, Kind: "reset", Index: 0, Target: "mcp", At: time.Second, Detail: "toxic reset-0"}
	assert.Equal(t, "fault reset #0 injected at 1.00s on mcp: toxic reset-0", describe(ev))
	ev.Phase = faults.PhaseHealed
	assert.Equal(t, "fault reset #0 healed at 1.00s on mcp", describe(ev))
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/local"
	"github.com/chaosrun/chaosrun/harness/results"
)

// runForBench runs chaosrun with args (results under a fresh folder) and
// returns the run it wrote.
func runForBench(b *testing.B, args ...string) *results.Run {
	b.Helper()
	out := b.TempDir()
	var stdout strings.Builder
	code := execute(context.Background(), append([]string{"run", "-q", "--out", out}, args...), &stdout, io.Discard)
	if code != exitMet {
		b.Fatalf("chaosrun run %v exited %d:\n%s", args, code, unmetReasons(stdout.String()))
	}
	runs, err := os.ReadDir(out)
	if err != nil || len(runs) != 1 {
		b.Fatalf("results: %v", err)
	}
	dir := filepath.Join(out, runs[0].Name())
	raw, err := os.ReadFile(filepath.Join(dir, results.RunFile))
	if err != nil {
		b.Fatal(err)
	}
	var run results.Run
	if err := json.Unmarshal(raw, &run); err != nil {
		b.Fatal(err)
	}
	for _, r := range run.Results {
		v, err := check.LoadVerdict(filepath.Join(r.Dir, check.VerdictFile))
		if err != nil {
			b.Fatal(err)
		}
		r.Verdict = &v
	}
	return &run
}

// unmetReasons is what a run's summary says of its unmet expectations: a
// benchmark's folder goes with it, so its failure must say why.
func unmetReasons(summary string) string {
	var out []string
	for _, line := range strings.Split(summary, "\n") {
		if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "## ") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// BenchmarkIncidentOverhead measures the harness's overhead on the
// double-charge incident: the experiment's wall time (workload start to
// every side effect settled) over its scheduled time (scaled tool duration
// plus scaled fault windows). Target: at most 1.25.
//
//	go test -run '^$' -bench IncidentOverhead -benchtime 5x ./cmd/chaosrun
func BenchmarkIncidentOverhead(b *testing.B) {
	var ratio float64
	for b.Loop() {
		run := runForBench(b, "../../experiments/double-charge-lb-idle.yaml")
		f := run.Results[0].Verdict.Figures
		ratio += float64(f.WallMS) / float64(f.ScheduledMS)
	}
	b.ReportMetric(ratio/float64(b.N), "wall/scheduled")
}

// BenchmarkLibrary runs the whole experiment library with --parallel at the
// number of CPUs and reports its wall time. Target: under 60 s.
//
//	go test -run '^$' -bench Library -benchtime 1x ./cmd/chaosrun
func BenchmarkLibrary(b *testing.B) {
	var wall time.Duration
	for b.Loop() {
		run := runForBench(b, "../../experiments")
		wall += time.Duration(run.WallMS) * time.Millisecond
	}
	b.ReportMetric((wall / time.Duration(b.N)).Seconds(), "library-wall-s")
}

// BenchmarkScale runs the scale experiments of experiments/scale (N
// resumable clients, one session and one 60 s charge each, through the
// proxy and a reset of every connection) and reports the workload's wall
// time over its scheduled time (target: at most 1.25), each agent's peak
// memory (several proxy agents, proxy-1 to proxy-k, when the clients'
// connections do not fit one proxy agent's open-file limit), and the
// memory of all agents per session. A size that does not fit the client
// or the server agent's limit is skipped, saying how many fit.
//
//	go test -run '^$' -bench Scale -benchtime 1x -timeout 30m ./cmd/chaosrun
func BenchmarkScale(b *testing.B) {
	for _, n := range []int{3000, 10000} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			lim, err := local.OpenFiles()
			if fit := harness.SessionsFitting(lim.Cur); n > fit {
				b.Skipf("agents here may open %d files (%v): at most %d sessions fit", lim.Cur, err, fit)
			}
			var ratio float64
			peaks := map[string]int64{}
			var total int64
			for b.Loop() {
				run := runForBench(b, fmt.Sprintf("../../experiments/scale/sessions-%d.yaml", n))
				r := run.Results[0]
				ratio += float64(r.Verdict.Figures.WallMS) / float64(r.Verdict.Figures.ScheduledMS)
				var usage []agent.Usage
				raw, err := os.ReadFile(filepath.Join(r.Dir, harness.UsageFile))
				if err != nil || json.Unmarshal(raw, &usage) != nil {
					b.Fatalf("usage: %v", err)
				}
				var sum int64
				for _, u := range usage {
					peaks[u.Agent] = max(peaks[u.Agent], u.PeakRSSKiB)
					sum += u.PeakRSSKiB
				}
				total = max(total, sum)
			}
			b.ReportMetric(ratio/float64(b.N), "wall/scheduled")
			for name, kib := range peaks {
				b.ReportMetric(float64(kib)/1024, name+"-peak-MiB")
			}
			b.ReportMetric(float64(total)/float64(n), "KiB/session")
		})
	}
}

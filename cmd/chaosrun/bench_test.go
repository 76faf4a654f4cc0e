package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/check"
)

// runForBench runs chaosrun with args (results under a fresh folder) and
// returns the run it wrote.
func runForBench(b *testing.B, args ...string) *harness.Run {
	b.Helper()
	out := b.TempDir()
	code := execute(context.Background(), append([]string{"run", "-q", "--out", out}, args...), io.Discard, io.Discard)
	if code != exitMet {
		b.Fatalf("chaosrun run %v exited %d", args, code)
	}
	runs, err := os.ReadDir(out)
	if err != nil || len(runs) != 1 {
		b.Fatalf("results: %v", err)
	}
	dir := filepath.Join(out, runs[0].Name())
	raw, err := os.ReadFile(filepath.Join(dir, harness.RunFile))
	if err != nil {
		b.Fatal(err)
	}
	var run harness.Run
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

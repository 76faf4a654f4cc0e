package groundtruth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
)

// The corpus test runs every experiment of experiments/corpus through the
// chaosrun binary, as a user's `chaosrun run` would, on the local runtime
// and, for those whose programs run there too, on the docker runtime;
// judges each from the wire alone; and holds the verdict against what the
// programs' own records say. Any disagreement fails it.
//
// CHAOSRUN_CORPUS_OUT keeps the binaries, the results and the report
// (corpus-report.md) in that folder; CHAOSRUN_CORPUS_MATCH runs only the
// experiments whose names match that regular expression;
// CHAOSRUN_CORPUS_RUNTIMES (local,docker) picks the runtimes. Without a
// Docker daemon the docker runs are skipped, unless
// CHAOSRUN_REQUIRE_DOCKER=1 makes that a failure.
func TestCorpus(t *testing.T) {
	if testing.Short() {
		t.Skip("the ground-truth corpus runs its experiments for minutes: not with -short")
	}
	module, err := filepath.Abs("../..")
	require.NoError(t, err)
	work := os.Getenv("CHAOSRUN_CORPUS_OUT")
	if work == "" {
		work = t.TempDir()
	}
	work, err = filepath.Abs(work)
	require.NoError(t, err)
	chaosrun, err := Build(t.Context(), module, filepath.Join(work, "bin"))
	require.NoError(t, err)
	experiments := corpusFiles(t, filepath.Join(module, "experiments", "corpus"))
	require.NotEmpty(t, experiments, "experiments/corpus holds the corpus")

	var free, fixed, docker []string // fixed: a fixed server address, one at a time
	for _, x := range experiments {
		if fixedAddress(x) != "" {
			fixed = append(fixed, x.Path)
		} else {
			free = append(free, x.Path)
		}
		if runsOnDocker(x) {
			docker = append(docker, x.Path)
		}
	}
	runtimes := os.Getenv("CHAOSRUN_CORPUS_RUNTIMES")
	var runs []Run
	if runtimes == "" || strings.Contains(runtimes, "local") {
		runs = append(runs, runBatch(t, chaosrun, work, "local", 2, free)...)
		unlock := lockFixedPorts(t)
		runs = append(runs, runBatch(t, chaosrun, work, "local", 1, fixed)...)
		unlock()
	}
	if runtimes == "" || strings.Contains(runtimes, "docker") {
		switch err := exec.Command("docker", "info").Run(); {
		case err == nil:
			runs = append(runs, runBatch(t, chaosrun, work, "docker", 2, docker)...)
		case os.Getenv("CHAOSRUN_REQUIRE_DOCKER") == "1":
			t.Fatalf("docker runtime: no Docker daemon (docker info: %v), and CHAOSRUN_REQUIRE_DOCKER=1", err)
		default:
			t.Logf("docker runtime: skipped, no Docker daemon (docker info: %v)", err)
		}
	}
	var report strings.Builder
	require.NoError(t, WriteReport(&report, runs))
	require.NoError(t, os.WriteFile(filepath.Join(work, "corpus-report.md"), []byte(report.String()), 0o644))
	var truths strings.Builder
	require.NoError(t, WriteTruths(&truths, runs))
	require.NoError(t, os.WriteFile(filepath.Join(work, "corpus-truths.md"), []byte(truths.String()), 0o644))
	t.Log("\n" + report.String())
	tally := Count(runs)
	fmt.Println("ground-truth corpus:", tally.Summary())
	if !tally.Clean() {
		t.Errorf("the verdicts disagree with the programs' own records: %s (table above; %s)", tally.Summary(), filepath.Join(work, "corpus-report.md"))
	}
}

// corpusFiles loads the corpus's experiments, those CHAOSRUN_CORPUS_MATCH
// names if it is set.
func corpusFiles(t *testing.T, dir string) []*spec.Experiment {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var match *regexp.Regexp
	if m := os.Getenv("CHAOSRUN_CORPUS_MATCH"); m != "" {
		match = regexp.MustCompile(m)
	}
	var out []*spec.Experiment
	for _, p := range paths {
		x, err := spec.Load(p)
		require.NoError(t, err)
		if match == nil || match.MatchString(x.Name) {
			out = append(out, x)
		}
	}
	return out
}

// lockFixedPorts holds a lock, shared by every corpus run on this machine,
// while experiments whose servers listen on fixed ports (8080, 3000) run:
// two at once would find the port taken.
func lockFixedPorts(t *testing.T) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "chaosrun-corpus-fixed-ports.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	require.NoError(t, err)
	require.NoError(t, syscall.Flock(int(f.Fd()), syscall.LOCK_EX))
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}
}

// runsOnDocker reports whether every program of an experiment runs on the
// docker runtime.
func runsOnDocker(x *spec.Experiment) bool {
	if fixedAddress(x) != "" {
		return false
	}
	for _, argv := range [][]string{commandOf(x.Server.Options), commandOf(x.Client.Options)} {
		if len(argv) == 0 {
			continue
		}
		if p, ok := program(filepath.Base(argv[0])); !ok || !p.Docker {
			return false
		}
	}
	return x.Server.Target != targets.Image
}

// fixedAddress is the fixed address a command server listens on, "" for
// none.
func fixedAddress(x *spec.Experiment) string {
	if c, ok := x.Server.Options.(*catalog.CommandOptions); ok {
		return c.Listen
	}
	return ""
}

// runBatch runs files with the chaosrun binary on a runtime, in work (where
// the experiments' commands find bin/), and checks every experiment run.
func runBatch(t *testing.T, chaosrun, work, runtime string, parallel int, files []string) []Run {
	t.Helper()
	if len(files) == 0 {
		return nil
	}
	out, err := os.MkdirTemp(work, "results-"+runtime+"-")
	require.NoError(t, err)
	args := append([]string{"run", "-q", "--runtime", runtime, "--parallel", fmt.Sprint(parallel), "--out", out}, files...)
	cmd := exec.CommandContext(context.WithoutCancel(t.Context()), chaosrun, args...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "TESTCONTAINERS_RYUK_DISABLED=true")
	output, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit) && (exit.ExitCode() == 1 || exit.ExitCode() == 2):
		// expectations not met, or inconclusive: the verdicts are what the corpus checks
	case err != nil:
		t.Fatalf("chaosrun %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	folders, err := filepath.Glob(filepath.Join(out, "*", "*", results.ExperimentFile))
	require.NoError(t, err)
	slices.Sort(folders)
	require.Len(t, folders, len(files), "one results folder per experiment:\n%s", output)
	var runs []Run
	for _, f := range folders {
		run, err := Check(filepath.Dir(f), runtime)
		if err != nil {
			t.Errorf("%s (%s): %v", filepath.Base(filepath.Dir(f)), runtime, err)
			continue
		}
		runs = append(runs, run)
	}
	return runs
}

// TestCorpusOffline holds the saved results of a corpus run (the folder
// CHAOSRUN_CORPUS_OUT kept) against the programs' records again, offline:
// CHAOSRUN_CORPUS_RECHECK=DIR, each results-RUNTIME-* folder under it.
func TestCorpusOffline(t *testing.T) {
	dir := os.Getenv("CHAOSRUN_CORPUS_RECHECK")
	if dir == "" {
		t.Skip("CHAOSRUN_CORPUS_RECHECK names no saved corpus run")
	}
	folders, err := filepath.Glob(filepath.Join(dir, "results-*", "*", "*", results.ExperimentFile))
	require.NoError(t, err)
	require.NotEmpty(t, folders, "%s holds no corpus results", dir)
	slices.Sort(folders)
	var runs []Run
	for _, f := range folders {
		runtime := strings.Split(strings.TrimPrefix(filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(f)))), "results-"), "-")[0]
		run, err := Check(filepath.Dir(f), runtime)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		runs = append(runs, run)
	}
	var report, truths strings.Builder
	require.NoError(t, WriteReport(&report, runs))
	require.NoError(t, WriteTruths(&truths, runs))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus-report.md"), []byte(report.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "corpus-truths.md"), []byte(truths.String()), 0o644))
	if tally := Count(runs); !tally.Clean() {
		t.Errorf("%s (%s)", tally.Summary(), filepath.Join(dir, "corpus-report.md"))
	}
}

package harness_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"testing"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/harness/spec"
)

// TestMain lets this test binary serve as the agents of the experiments its
// tests run: without Options.NewRuntime, Execute starts this very executable
// as "agent ROLE ...", and RunIfAgent takes over there. A user's own test
// package does the same.
func TestMain(m *testing.M) {
	roles.RunIfAgent()
	os.Exit(m.Run())
}

// Running an experiment from a test: load it, run it on the local runtime
// (agents are child processes of the test binary), and read its verdict.
func ExampleExecute() {
	x, err := spec.Load("../experiments/double-charge-lb-idle.yaml")
	if err != nil {
		log.Fatal(err)
	}
	out, err := os.MkdirTemp("", "chaosrun-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(out)
	run, err := harness.Execute(context.Background(), harness.Options{Out: out}, []*spec.Plan{x.Plan(spec.Overrides{})})
	if err != nil {
		log.Fatal(err)
	}
	res := run.Results[0]
	fmt.Println(res.Name, res.Verdict.Verdict, "met:", res.Met)
	fmt.Println(res.Verdict.Violations)
	// Output:
	// double-charge-lb-idle fail met: true
	// [no_duplicate_side_effects no_session_fork no_orphaned_results outcomes_resolved]
}

// Judging a saved run again, offline: a run's folder or one experiment's,
// such as a CI artifact.
func ExampleRejudge() {
	run, err := results.Rejudge("testdata/saved-run")
	if err != nil {
		log.Fatal(err)
	}
	for _, res := range run.Results {
		fmt.Println(res.Name, res.Verdict.Verdict, "met:", res.Met)
		f := res.Verdict.Figures
		fmt.Println("charges", f.Charges, "duplicates", f.Duplicates, "orphaned results", f.OrphanedResults)
	}
	// Output:
	// double-charge-lb-idle fail met: true
	// charges 2 duplicates 1 orphaned results 2
}

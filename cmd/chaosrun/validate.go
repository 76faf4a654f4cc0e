package main

import (
	"errors"
	"fmt"
	"github.com/chaosrun/chaosrun/harness/agent"
	"io/fs"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/spf13/cobra"
)

const defaultExperiments = "experiments"

// loadExperiments loads paths (default: the experiments folder) and checks
// that their bring-your-own programs can be started from here; every
// problem in every file is an invalid-input error.
func loadExperiments(paths []string) ([]*spec.Experiment, error) {
	return loadExperimentsFor(paths, "")
}

// loadExperimentsFor loads experiments to run on the runtime named
// runtime ("" for none in particular): what that runtime cannot run is
// refused first, with its reason, and a program it would not run anyway
// is not looked for on this machine.
func loadExperimentsFor(paths []string, runtime string) ([]*spec.Experiment, error) {
	if len(paths) == 0 {
		if _, err := os.Stat(defaultExperiments); errors.Is(err, fs.ErrNotExist) {
			wd, _ := os.Getwd()
			return nil, withCode(exitInvalid, fmt.Errorf("no %s/ folder in %s: name experiment files or folders, as in: chaosrun run path/to/experiment.yaml (the library is the experiments/ folder of the chaosrun repository)", defaultExperiments, wd))
		}
		paths = []string{defaultExperiments}
	}
	exps, err := spec.LoadPaths(paths)
	caps, known := runtimeCapabilities(runtime)
	if err == nil && known {
		err = checkRuntime(exps, caps)
	}
	if err == nil && (!known || caps.Programs) {
		err = spec.CheckCommands(exps)
	}
	if errors.Is(err, spec.ErrInvalid) {
		return nil, withCode(exitInvalid, err)
	}
	if err != nil {
		return nil, withCode(exitHarness, err)
	}
	return exps, nil
}

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check experiment files without running them (default: experiments/)",
		Long: `Validate loads every experiment file as run would (strict YAML: an unknown key, a bad value or a
missing field is reported with its file, line, column and field) and runs nothing.

Exit codes: 0 every file is valid, 3 some file is not.`,
		Example: `  chaosrun validate experiments/ experiments/blackbox/
  chaosrun validate my-experiment.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			exps, err := loadExperiments(args)
			if err != nil {
				return err
			}
			for _, x := range exps {
				fmt.Fprintf(cmd.OutOrStdout(), "ok  %s (%s)\n", x.Name, x.Path)
			}
			return nil
		},
	}
}

func newListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list [PATH...]",
		Short: "List experiments with their expected verdict (default: experiments/)",
		RunE: func(cmd *cobra.Command, args []string) error {
			exps, err := loadExperiments(args)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tEXPECT\tCLIENT\tSERVER\tFAULTS\tDESCRIPTION")
			for _, x := range exps {
				kinds := make([]string, len(x.Faults))
				for i, f := range x.Faults {
					kinds[i] = f.Kind
				}
				desc, _, _ := strings.Cut(strings.TrimSpace(x.Description), "\n")
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", x.Name, x.Expect.Verdict, x.Client.Target,
					x.Server.Target, strings.Join(kinds, ","), desc)
			}
			return tw.Flush()
		},
	}
}

// checkRuntime refuses, all at once, what in exps the runtime of caps
// cannot run.
func checkRuntime(exps []*spec.Experiment, caps agent.Capabilities) error {
	var problems []spec.Problem
	for _, x := range exps {
		var se *spec.Error
		if errors.As(x.CheckRuntime(caps, knownRuntimes()), &se) {
			problems = append(problems, se.Problems...)
		}
	}
	if len(problems) > 0 {
		return &spec.Error{Problems: problems}
	}
	return nil
}

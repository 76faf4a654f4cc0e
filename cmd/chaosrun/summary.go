package main

import (
	"fmt"
	"io"
	"os"

	"github.com/chaosrun/chaosrun/harness/results"
)

// appendStepSummary appends the run's summary to the file GitHub Actions
// names in $GITHUB_STEP_SUMMARY, so the job's page shows it; elsewhere it
// does nothing.
func appendStepSummary(run *results.Run) error {
	path := os.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	if err := results.WriteSummary(f, run); err != nil {
		f.Close()
		return fmt.Errorf("step summary: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("step summary: %w", err)
	}
	return nil
}

// isTerminal reports whether w is a terminal that can redraw a line.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

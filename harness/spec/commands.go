package spec

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/chaosrun/chaosrun/targets"
)

// CheckCommands reports every program of the user's that a target runs
// (targets.Commanded: server.command[0], client.command[0]) that cannot be run from this machine's working
// directory: a bare name not in PATH, a path to nothing, to a folder, or to
// a file without an execute bit. It is not part of Load, because a saved
// run's experiment.yaml is judged again offline where the program may be
// absent; chaosrun validate and chaosrun run call it before anything
// starts. Its error wraps ErrInvalid and names file, line and field.
func CheckCommands(xs []*Experiment) error {
	var all []Problem
	for _, x := range xs {
		ps := &problems{file: x.Path}
		for _, b := range []struct {
			key  string
			opts targets.Options
		}{{"server", x.Server.Options}, {"client", x.Client.Options}} {
			c, ok := b.opts.(targets.Commanded)
			if !ok {
				continue
			}
			program, setting := c.Program()
			if program == "" {
				continue
			}
			if msg := notRunnable(program); msg != "" {
				path := b.key + "." + setting
				line, col := x.at(path)
				ps.add(line, col, path, "%s", msg)
			}
		}
		all = append(all, ps.list...)
	}
	if len(all) > 0 {
		return &Error{Problems: all}
	}
	return nil
}

// notRunnable says why program cannot be started, or "" when it can.
func notRunnable(program string) string {
	if !strings.ContainsRune(program, filepath.Separator) {
		if _, err := exec.LookPath(program); err != nil {
			return fmt.Sprintf("%q is not in PATH", program)
		}
		return ""
	}
	info, err := os.Stat(program)
	switch {
	case err != nil && !filepath.IsAbs(program):
		wd, _ := os.Getwd()
		return fmt.Sprintf("%q does not exist (a relative path resolves against the working directory, %s)", program, wd)
	case err != nil:
		return fmt.Sprintf("%q does not exist", program)
	case info.IsDir():
		return fmt.Sprintf("%q is a folder, not a program", program)
	case info.Mode().Perm()&0o111 == 0:
		return fmt.Sprintf("%q is not executable (mode %s)", program, info.Mode().Perm())
	}
	return ""
}

package local

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// Sample reads what the agent's running incarnation holds now, summed over
// its process group (the agent, and a program of the user's it runs as a
// child): resident memory from /proc/PID/status (VmRSS) and open file
// descriptors from /proc/PID/fd. A process that exits between the listing
// and the reading is left out.
func (p *process) Sample() (agent.Sample, error) {
	in, n, err := p.Running()
	if err != nil {
		return agent.Sample{}, err
	}
	pgid := in.(*incarnation).cmd.Process.Pid // the leader of its own group (Setpgid)
	s := agent.Sample{Incarnation: n}
	for _, pid := range groupMembers(pgid) {
		rss, ok := vmRSS(pid)
		if !ok {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
		if err != nil {
			continue
		}
		s.RSSKiB += rss
		s.FDs += len(fds)
		s.Procs++
	}
	return s, nil
}

var _ agent.Sampled = (*process)(nil)

// groupMembers lists the processes whose process group is pgid.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, ok := pgrp(pid); ok && g == pgid {
			out = append(out, pid)
		}
	}
	return out
}

// pgrp reads a process's group from /proc/PID/stat: "pid (comm) state ppid
// pgrp ...", where comm may hold spaces and parentheses, so the fields are
// read after the last ')'.
func pgrp(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	return g, err == nil
}

// vmRSS reads a process's resident set in KiB from /proc/PID/status.
func vmRSS(pid int) (int64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, false
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		kib, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kib, err == nil
	}
	return 0, false // a zombie has no VmRSS
}

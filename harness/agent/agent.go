// Package agent is the contract between the runner and a runtime: how an
// agent (ledger, server, proxy or client: every role is the same chaosrun
// binary) is started, found, faulted and stopped, whether it is a child
// process on loopback or a container on a private network.
//
// A runtime says how one incarnation of an agent starts, gets ready, stops,
// pauses and exits (Incarnation, Launcher); Lifecycle keeps the books
// across incarnations (restarts, planned versus own exits, Wait) the same
// way for every runtime.
//
// What an agent is to do reaches it as one configuration file
// (Spec.Config), which the runtime puts in the agent's state folder as
// ConfigFile before the agent first starts. What a runtime can run it
// reports as Capabilities; the runner and the experiment loader ask those
// instead of knowing runtimes by name.
//
// A new runtime implements Runtime (Start, an idempotent Close,
// Capabilities) and Process, delivers Spec.Config, hands the agent's state
// folder back into Spec.StateDir, and exports its capabilities as a
// function of its package so that experiments are checked against them
// before any runtime is made.
package agent

import (
	"context"
	"errors"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

// Roles of an experiment's agents.
const (
	RoleLedger = "ledger"
	RoleServer = "server"
	RoleProxy  = "proxy"
	RoleClient = "client"
)

// ErrNotRunning is returned when a fault targets an agent that is not running.
var ErrNotRunning = errors.New("agent not running")

// ConfigFile is the agent's configuration in its state folder: what the
// runner tells it, as JSON (Spec.Config).
const ConfigFile = "agent.json"

// Spec describes one agent to start.
type Spec struct {
	Role string
	// Args follow "chaosrun agent <role>". The runtime adds the flags it
	// owns (see CommandLine): --addr (the listen address, kept across
	// restarts so peers can reconnect), --state (where the agent sees
	// StateDir), and the flags of Clock and LedgerURL; relative file paths
	// in Args are resolved by the agent against --state.
	Args []string
	// Config, if set, is the agent's configuration: the runtime puts it
	// in the agent's state folder as ConfigFile before the agent first
	// starts, where the agent reads it, and where the state folder the
	// runtime hands back keeps it with the results.
	Config []byte
	// Env is extra environment for the agent (KEY=value).
	Env []string
	// StateDir is the runner-side folder that persists across restarts of
	// the agent: stores, cursors, the history it writes.
	StateDir string
	// LogPath receives the agent's stderr, appended across restarts.
	LogPath string
	// Port is the port the agent listens on inside its own network
	// namespace (a container); 0 on loopback, where the runtime picks one.
	Port int
	// PeerPorts are further ports the agent opens inside its own network
	// namespace for its peers (the proxy agent's client edge). A runtime
	// whose peers reach an agent only on ports it declares (a Kubernetes
	// Service) declares these too; the others may ignore them.
	PeerPorts []int
	// Serves is false for an agent that prints no URL (the client).
	Serves bool
	// Clock is the run's base clock, the zero of every time the agent
	// records (--base). A zero Clock lets the agent count from its start.
	Clock runclock.Clock
	// LedgerURL is the ledger as the agent reaches it (--ledger, a
	// server's); "" for an agent that writes no ledger.
	LedgerURL string
	// Image, for a server, is a bring-your-own image (server.target image)
	// to run in the agent's place: with its own entrypoint and command, and
	// the environment of targets/byo made of Port, LedgerURL, Clock and the
	// state folder instead of Args. "" runs the agent. Only a runtime that
	// runs containers runs images.
	Image string
	// Program, for an agent that runs a bring-your-own command (server or
	// client target command), is the program as the experiment names it
	// (command[0]). A runtime that runs agents in containers makes a
	// program named by a path visible inside at that path, a relative one
	// under the container's working directory; a bare name must be in the
	// agent image's PATH.
	Program string
}

// CommandLine is the agent's command line after the binary: "agent ROLE",
// the state folder as the agent sees it, a serving agent's listen address,
// the flags of Clock and LedgerURL, then Args.
func (s Spec) CommandLine(state, addr string) []string {
	a := []string{"agent", s.Role, "--state", state}
	if s.Serves {
		a = append(a, "--addr", addr)
	}
	if !s.Clock.Base().IsZero() {
		a = append(a, "--base", s.Clock.String())
	}
	if s.LedgerURL != "" {
		a = append(a, "--ledger", s.LedgerURL)
	}
	return append(a, s.Args...)
}

// Runtime starts agents for one experiment and removes every one of them on
// Close, on every exit path.
type Runtime interface {
	// Start starts an agent and, if it serves, waits until it has printed
	// its bound URL.
	Start(ctx context.Context, spec Spec) (Process, error)
	// Close stops every agent still running. It is idempotent.
	Close() error
	// Capabilities says what the runtime can run.
	Capabilities() Capabilities
}

// Process is a started agent, across its restarts.
type Process interface {
	// URL is the agent's base URL as the runner reaches it.
	URL() string
	// PeerAddr is host:port as other agents reach it.
	PeerAddr() string
	// Restart stops the agent (SIGTERM and wait when graceful, SIGKILL
	// otherwise) and starts it again with the same arguments and state.
	Restart(ctx context.Context, graceful bool) error
	// Pause freezes the agent (SIGSTOP, container pause); Resume thaws it.
	Pause(ctx context.Context) error
	Resume(ctx context.Context) error
	// Stop ends the agent: SIGTERM and wait when graceful, else SIGKILL.
	Stop(ctx context.Context, graceful bool) error
	// Start starts a stopped agent again with the same arguments and
	// state (a crash that stays down, then comes back).
	Start(ctx context.Context) error
	// Wait waits until the agent exits on its own (not because the harness
	// stopped or restarted it) and returns its exit code. Each such exit is
	// returned once, oldest first, however long after it came (Lifecycle).
	Wait(ctx context.Context) (int, error)
	// CopyOut copies a file the agent wrote in its state folder (path
	// relative to it) to dst on the runner's side.
	CopyOut(ctx context.Context, rel, dst string) error
}

// Usage is what one incarnation of an agent consumed, as its runtime
// measured it once the incarnation exited.
type Usage struct {
	// Agent names the agent in the experiment: its role, or a server
	// replica's name (server-2). The runtime leaves it to the runner.
	Agent       string `json:"agent,omitempty"`
	Role        string `json:"role"`
	Incarnation int    `json:"incarnation"` // 1 for the first start, 2 after a restart, ...
	// PeakRSSKiB is the incarnation's peak resident set (getrusage's
	// ru_maxrss, /proc/PID/status VmHWM at exit).
	PeakRSSKiB int64 `json:"peak_rss_kib"`
	UserMS     int64 `json:"user_ms"`
	SystemMS   int64 `json:"system_ms"`

	_ struct{}
}

// Measured is a Process whose runtime measures its incarnations: the
// local runtime does; a container runtime need not.
type Measured interface {
	// Usage returns the usage of every incarnation that has exited, in
	// start order.
	Usage() []Usage
}

// Sample is what a running agent held at one instant: its resident memory
// and open file descriptors, summed over its process group (an agent that
// runs a program of the user's holds it as a child), as a runtime that
// samples its agents reads them.
type Sample struct {
	// Agent names the agent (a role, or a server replica's name) and TUS
	// is the run clock's time of the reading; the runner sets both.
	Agent string `json:"agent"`
	TUS   int64  `json:"t_us"`
	// Incarnation counts the agent's starts (1, then 2 after a restart).
	Incarnation int   `json:"incarnation"`
	RSSKiB      int64 `json:"rss_kib"`
	FDs         int   `json:"fds"`
	// Procs is how many processes the group held.
	Procs int `json:"procs"`
}

// Sampled is a Process whose runtime can read what its running incarnation
// holds now (the local runtime reads /proc). Sample fails with
// ErrNotRunning while no incarnation runs.
type Sampled interface {
	Sample() (Sample, error)
}

// Capabilities is what a runtime can run, as the runner and the experiment
// loader ask it instead of knowing runtimes by name. A runtime package
// exports its capabilities as a function too, so that experiments are
// checked against them before any runtime is made.
type Capabilities struct {
	// Runtime is the runtime's name as --runtime takes it.
	Runtime string
	// Images: it runs a server target's own container image in the server
	// agent's place (server.target image; Spec.Image).
	Images bool
	// FixedAddresses: its agents listen on the runner's loopback, so a
	// server may listen on a fixed loopback address (server.listen).
	FixedAddresses bool
	// Daemons are the programs the runner starts beside the agents on its
	// own loopback that the agents can reach: nginx and haproxy (a
	// balancer:), redis (a store the replicas share).
	Daemons []string
	// Pause: it freezes an agent and thaws it (Process.Pause).
	Pause bool
	// Programs: it runs a bring-your-own program of the runner's machine
	// in an agent (a server or client target command; Spec.Program).
	Programs bool
	// Services: the runtime itself spreads requests over a role's agents
	// (a Kubernetes Service over every server replica's pod), and
	// implements Balancing (a balancer: of kind service).
	Services bool
	// OpenFiles is how many files each agent may open, when the agents
	// share one limit the runner can read (the local runtime's child
	// processes: RLIMIT_NOFILE); 0 when each has its own (containers).
	OpenFiles uint64
	// Why says, in the runtime's words, why it lacks a capability, keyed
	// by CapImages, CapFixedAddresses, CapDaemons, CapPause, CapPrograms or
	// CapServices;
	// shown after a refusal.
	Why map[string]string
}

// Keys of Capabilities.Why.
const (
	CapImages         = "images"
	CapFixedAddresses = "fixed_addresses"
	CapDaemons        = "daemons"
	CapPause          = "pause"
	CapPrograms       = "programs"
	CapServices       = "services"
)

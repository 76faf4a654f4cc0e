package faults

// A fault's params say what the fault needs of a run through the optional
// interfaces below, discovered by type assertion: a loader checks them
// against the experiment (is there a replica 3, a balancer, a session to
// expire?), the runner against its topology, and the injector acts on
// them. A new kind implements those that apply; nothing outside this
// package lists kinds.

// Target is the process a process fault acts on, and how.
type Target struct {
	// Role is the agent's role (server, client, ledger), or a process the
	// runner starts besides the agents (balancer, redis).
	Role string
	// Replica is the server replica, from 1; 0 is the first (or only) one.
	Replica int
	// Stops says the fault ends the process, and every call it was
	// running with it, before starting it again (a crash, a restart).
	Stops bool
	// Kills says it ends it at once (SIGKILL), not by asking it to stop:
	// a request that reaches the process afterwards on a connection it
	// held reaches nothing.
	Kills bool
	// Freezes says the fault freezes the process for a while (SIGSTOP, a
	// container pause) and thaws it, without ending it.
	Freezes bool
}

// Name is the process as the runner names it (see [AgentName]).
func (t Target) Name() string { return AgentName(t.Role, t.Replica) }

// Targeted is implemented by the params of a fault that acts on one
// process: [Crash], [Restart], [Pause].
type Targeted interface {
	Target() Target
}

// Control is what a fault asks of the server through its control
// endpoint: one server, never a replica among several.
type Control struct {
	// Action is posted to {control}/control/<Action>.
	Action string
	// Sessions says the action acts on the server's MCP sessions: at a
	// revision without sessions it has nothing to act on.
	Sessions bool
	// Tasks says the action acts on the server's task store: the server
	// must run tasks.
	Tasks bool
}

// Controlled is implemented by the params of a fault that acts through
// the server's control endpoint: [ExpireSession], [TerminateSession],
// [DropTasks].
type Controlled interface {
	Control() Control
}

// Resetting is implemented by the params of a fault that may close
// connections by reset (RST) rather than FIN: when a plan holds one that
// does, the injector makes every close of the proxy's connections a reset
// (see [Run]).
type Resetting interface {
	ClosesByReset() bool
}

// Answering is implemented by the params of a fault that answers requests
// in the server's place, or changes what the server answers: a call it
// makes fail is its doing, not the workload's.
type Answering interface {
	AnswersForTheServer() bool
}

// Cutting is implemented by the params of a fault that may keep a
// client's request from crossing the proxy whole (a connection refused or
// cut in the middle of it): calls seen on the wire are then a lower bound.
type Cutting interface {
	CutsRequests() bool
}

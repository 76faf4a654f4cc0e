package harness

import (
	"fmt"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets/catalog"
)

// Descriptors each agent holds for each connection a client keeps through
// the proxy. The proxy agent: the client edge's tap accepts one and dials
// Toxiproxy, Toxiproxy accepts that and dials the server edge's tap, which
// accepts it and dials the server. The client agent holds the connection's
// other end, the server agent the end the server edge's tap dialled.
const (
	proxyFilesPerConn  = 6
	clientFilesPerConn = 1
	serverFilesPerConn = 1
	// agentFilesReserve covers what an agent opens besides connections:
	// listeners, logs, the wire file, the runtime's pipes, and for the
	// server its connections to the ledger.
	agentFilesReserve = 256
)

// proxyAgents is how many proxy agents carry the plan's clients, and it
// refuses a workload whose connections cannot fit in the open-file limit
// of the runtime's agents, before anything starts: each of the plan's
// clients keeps a connection through the proxy at once (a long call's
// stream), and an agent out of descriptors fails its accepts until the
// experiment's deadline, far from the cause.
//
// One proxy agent carries every client when they fit in it, or when the
// runtime's agents share no limit the runner can read (its Capabilities
// say OpenFiles 0: containers, each with its own). Otherwise the clients are dealt over as few proxy agents
// as fit, each holding the descriptors of its share (see wire.Share): the
// client and the server agent still hold one per client each, and must fit
// on their own. A plan that cannot be spread (a command client takes one
// endpoint; a process fault on the proxy would reach one of them; a
// trigger's nth would count one agent's share) is refused with what it
// would need.
func proxyAgents(rt agent.Runtime, p *spec.Plan) (int, error) {
	limit := rt.Capabilities().OpenFiles
	if limit == 0 {
		return 1, nil
	}
	clients := p.Template.Clients
	fit := ClientsFitting(limit)
	if clients <= fit {
		return 1, nil
	}
	need := clients*proxyFilesPerConn + agentFilesReserve
	refuse := func(why string) error {
		return fmt.Errorf("workload.clients: %d clients keep %d connections through the proxy agent, which holds %d descriptors for each "+
			"(a tap at each edge and Toxiproxy between them): about %d open files, but agents here may open %d "+
			"(RLIMIT_NOFILE; the runtime raises it to the hard limit, and past that only with CAP_SYS_RESOURCE or a higher `ulimit -Hn`); "+
			"at most %d clients fit in one proxy agent, and %s", clients, clients, proxyFilesPerConn, need, limit, fit, why)
	}
	for _, a := range []struct {
		role    string
		perConn int
	}{{agent.RoleClient, clientFilesPerConn}, {agent.RoleServer, serverFilesPerConn}} {
		if n := uint64(clients*a.perConn + agentFilesReserve); n > limit {
			return 0, refuse(fmt.Sprintf("the %s agent alone needs about %d (%d for each client)", a.role, n, a.perConn))
		}
	}
	// The client agent's bound keeps n at most proxyFilesPerConn.
	n := (clients + fit - 1) / fit
	switch {
	case oneEndpoint(p):
		return 0, refuse(fmt.Sprintf("a %s client takes one endpoint, so they cannot be spread over %d proxy agents", p.Client.Target, n))
	case processFaultOn(p.Faults, agent.RoleProxy):
		return 0, refuse(fmt.Sprintf("a process fault on the proxy would reach one of the %d proxy agents they need", n))
	case countsAcrossCalls(p.Faults):
		return 0, refuse(fmt.Sprintf("a trigger's nth would count in one of the %d proxy agents they need, each seeing its share of the calls", n))
	}
	return n, nil
}

// processFaultOn reports whether a process fault of the plan targets role.
func processFaultOn(ins []faults.Injection, role string) bool {
	for _, in := range ins {
		if t, ok := in.Params.(faults.Targeted); ok && t.Target().Role == role {
			return true
		}
	}
	return false
}

// oneEndpoint says whether the plan's client takes one endpoint.
func oneEndpoint(p *spec.Plan) bool {
	c, _ := catalog.Client(p.Client.Target)
	return c.OneEndpoint
}

// clientRecords is the file the plan's client agent leaves for the
// checker: its history, or the exit record of a program of the user's.
func clientRecords(p *spec.Plan) string {
	c, _ := catalog.Client(p.Client.Target)
	return c.Records
}

// countsAcrossCalls reports whether a trigger of the plan fires at the nth
// occurrence of an event across calls, which each proxy agent counts among
// its own share; the nth sse_event counts within one call's stream, which
// one agent carries whole.
func countsAcrossCalls(ins []faults.Injection) bool {
	for _, in := range ins {
		if t := in.Trigger; t != nil && t.Nth > 1 && t.Event != trigger.EventSSEEvent {
			return true
		}
	}
	return false
}

// ClientsFitting is how many clients one proxy agent may carry when each
// agent may open openFiles files.
func ClientsFitting(openFiles uint64) int {
	return int((openFiles - min(openFiles, agentFilesReserve)) / proxyFilesPerConn)
}

// SessionsFitting is how many clients an experiment may have when each
// agent may open openFiles files: the runner spreads them over as many
// proxy agents as it takes, and the client and the server agent, which
// hold one descriptor for each client, bound it.
func SessionsFitting(openFiles uint64) int {
	return int((openFiles - min(openFiles, agentFilesReserve)) / max(clientFilesPerConn, serverFilesPerConn))
}

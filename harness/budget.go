package harness

import (
	"fmt"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// Descriptors the proxy agent holds for each connection a client keeps
// through it: the client edge's tap accepts one and dials Toxiproxy,
// Toxiproxy accepts that and dials the server edge's tap, which accepts it
// and dials the server. The proxy is the agent that runs out first: the
// client and the server hold one descriptor per connection.
const (
	proxyFilesPerConn = 6
	// agentFilesReserve covers what an agent opens besides connections:
	// listeners, logs, the wire file, the runtime's pipes.
	agentFilesReserve = 256
)

// checkOpenFiles refuses a workload whose connections cannot fit in the
// open-file limit of the runtime's agents, before anything starts: each of
// the plan's clients keeps a connection through the proxy at once (a long
// call's stream), and an agent out of descriptors fails its accepts until
// the experiment's deadline, far from the cause.
func checkOpenFiles(rt agent.Runtime, clients int) error {
	fl, ok := rt.(agent.FileLimited)
	if !ok {
		return nil
	}
	limit := fl.OpenFiles()
	fit := ClientsFitting(limit)
	if clients <= fit {
		return nil
	}
	need := clients*proxyFilesPerConn + agentFilesReserve
	return fmt.Errorf("workload.clients: %d clients keep %d connections through the proxy agent, which holds %d descriptors for each "+
		"(a tap at each edge and Toxiproxy between them): about %d open files, but agents here may open %d "+
		"(RLIMIT_NOFILE; the runtime raises it to the hard limit, and past that only with CAP_SYS_RESOURCE or a higher `ulimit -Hn`); "+
		"at most %d clients fit", clients, clients, proxyFilesPerConn, need, limit, fit)
}

// ClientsFitting is how many clients an experiment may have when each agent
// may open openFiles files.
func ClientsFitting(openFiles uint64) int {
	return int((openFiles - min(openFiles, agentFilesReserve)) / proxyFilesPerConn)
}

// Package catalog is the catalogue of targets: every server and client
// chaosrun can put under test, each as its package describes it
// (targets.Server, targets.Client: its options type and defaults, the
// revisions and task modes it speaks, its tools and control actions),
// and the bring-your-own targets, whose options are declared here because
// their implementation is the user's.
//
// The experiment loader reads an experiment's server: and client: blocks
// into the options of the targets they name, and the agents read their
// configuration back into the same types, through this package: adding a
// target is adding its description to the lists below.
package catalog

import (
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/client"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/server"
)

// The targets an experiment gets when it names none.
const (
	DefaultServer = targets.Reference
	DefaultClient = targets.Resumable
)

// Servers lists every server target, in the order the documentation
// lists them.
func Servers() []targets.Server {
	return []targets.Server{server.Descriptor, gosdk.ServerDescriptor, mcpgo.ServerDescriptor, CommandServer, ImageServer}
}

// Clients lists every client target, in the order the documentation lists
// them.
func Clients() []targets.Client {
	return []targets.Client{client.NaiveDescriptor, client.ResumableDescriptor, gosdk.ClientDescriptor, mcpgo.ClientDescriptor, CommandClient}
}

// Server returns the server target named name.
func Server(name string) (targets.Server, bool) {
	for _, s := range Servers() {
		if s.Name == name {
			return s, true
		}
	}
	return targets.Server{}, false
}

// Client returns the client target named name.
func Client(name string) (targets.Client, bool) {
	for _, c := range Clients() {
		if c.Name == name {
			return c, true
		}
	}
	return targets.Client{}, false
}

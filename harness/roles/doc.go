// Package roles is the agents of an experiment: the ledger, the server,
// the fault proxy and the client, each a role of one binary ("agent ROLE"),
// which the runtimes start as processes or containers.
//
// The chaosrun binary serves as every agent, and so can any program that
// calls [RunIfAgent] first: a user's test binary, whose TestMain does so,
// runs experiments with harness.Execute and no chaosrun binary at all,
// exactly as chaosrun's own tests do:
//
//	func TestMain(m *testing.M) {
//		roles.RunIfAgent() // serves as an agent when the harness started this binary as one
//		os.Exit(m.Run())
//	}
package roles

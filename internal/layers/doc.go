// Package layers holds no code: its test guards the direction of the
// module's imports.
//
// The layering is cmd → harness → {faults, targets} → {sideeffects, wire},
// with internal below all: faults and targets import no harness or cmd
// package; the ledger (sideeffects) imports neither faults nor targets (it
// is a witness independent of what it records; joining it with the client
// histories is the checker's job); wire (the record format, the observer's
// tap and parser, MCP's vocabulary in wire/mcp) imports nothing above
// internal, and wire/mcp imports nothing of the module at all; internal
// imports no chaosrun package outside internal; and examples import only
// the bring-your-own contract (an example target knows chaosrun's
// environment contract, not its code). Faults and targets may still import
// each other (a test that runs a real server through the fault proxy, an
// end-to-end test of a target under our toxics). A package's tests count
// as part of it, and a dependency counts however many packages it passes
// through. A new top-level folder fails the test until it is given a row.
//
// Within the harness, a runtime (harness/agent, harness/local,
// harness/docker, harness/kube) knows agents, not experiments, targets or faults: it
// starts what it is given and reports its capabilities. And a target's
// implementation (targets/server, targets/client, targets/gosdk,
// targets/mcpgo) is imported only within targets, by the agent that runs
// it (harness/roles) and by the CLI: the loader and the runner know a
// target by the description it declares (targets/catalog).
package layers

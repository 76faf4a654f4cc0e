// Package layers holds no code: its test guards the direction of the
// module's imports.
//
// The layering is cmd → harness → {faults, sideeffects, targets}, with
// internal below all: the leaves (faults, sideeffects, targets) import no
// harness or cmd package, sideeffects imports no targets package (the ledger
// is a witness independent of what it records; joining it with the client
// histories is the checker's job), internal imports no chaosrun package
// outside internal, and examples import none at all (an example target knows
// chaosrun's environment contract, not its code). A package's tests count as
// part of it, and a dependency counts however many packages it passes
// through. A new top-level folder fails the test until it is given a row.
//
// Within the harness, a runtime (harness/agent, harness/local,
// harness/docker) knows agents, not experiments, targets or faults: it
// starts what it is given and reports its capabilities. And a target's
// implementation (targets/server, targets/client, targets/gosdk,
// targets/mcpgo) is imported only within targets, by the agent that runs
// it (harness/roles) and by the CLI: the loader and the runner know a
// target by the description it declares (targets/catalog).
package layers

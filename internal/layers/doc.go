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
package layers

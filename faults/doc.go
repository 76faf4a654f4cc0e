// Package faults is chaosrun's fault catalogue: the Toxiproxy toxics
// (Toxiproxy's own and ours), process faults (restart, crash, pause) and
// protocol faults (expire or terminate a session), their parameters, seeded
// schedules, and the log of every injection on the run's base clock.
//
// The runner hands an injector the handles it needs ([Env]); faults itself
// never starts processes or reads experiment files.
package faults

// Package harness runs experiments: it starts each experiment's agents on a
// runtime (child processes or containers), drives the fault schedule
// alongside the workload on one base clock, waits for every call and side
// effect to settle, collects the histories, the ledger and the fault log,
// judges them with the checker, and writes the results folder through
// package results.
//
// A run can repeat every experiment (Options.Repeat) and take a share of
// them (Options.Shard, for runs split across machines); what a run's
// results folder holds, and how saved runs are counted, joined and judged
// again, is package results'.
//
// Before it starts an experiment's agents it checks that their
// connections fit the runtime's open-file limit (budget.go): clients that
// do not fit one proxy agent are spread over several (proxies.go), which
// take faults, triggers and the wire as one.
//
// Subpackages own the pieces: spec (experiment files), agent (the runtime
// contract), local and docker (runtimes), check (the checker), results (a
// run's results folder), balancer
// (nginx and HAProxy between the fault proxy and the server replicas) and
// redisserver (the replicas' shared store). The runner starts those two as
// child processes on loopback whatever the runtime, which is why spec
// refuses them on the docker runtime.
package harness

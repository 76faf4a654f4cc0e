// Package groundtruth proves chaosrun's verdicts against ground truth: a
// corpus of experiments (experiments/corpus) pairing MCP programs nobody
// here wrote (the go-sdk's and mcp-go's own example and conformance
// servers and clients, each as it is) with each other and with chaosrun's
// own targets, under every fault kind; and, for every run, an oracle the
// checker never reads, held against the verdict.
//
// The oracle is each program's own record of what it did: a server's log
// of the calls it ran (a logging middleware, hooks, a line per charge or
// per event sent), a client's printed results, failures and fatal line, and
// for chaosrun's own programs their history and ledger, read here by
// decoders of this package. The verdict it is held against is judged from
// the wire alone ([Check] re-judges every run without the ledger and the
// history), so the two never share a source: nothing here reads the wire's
// parser (wire/observer, wire) or asks the checker
// (harness/check) anything but its verdict. The wire's record is read only
// to check that the evidence a verdict cites exists.
//
// A [ServerRecord] and a [ClientRecord] are what each program's record
// establishes; what it cannot establish is said ([Range] and [Judgement]
// carry "not established" and why) and never compared. [Derive] joins them
// into a run's [Truth]: the fault hit a call in flight or not; calls made
// and read; executions per logical call (duplicates); events sent,
// received, missing, inside surfaced gaps; sessions and forks; results
// written and never read; the client's exit; and from those each invariant
// held or violated. [Compare] holds a verdict against it: a verdict is
// false when it claims what the truth contradicts (held or not judged over
// a violation, violated over a hold, a pass over a fault that never hit;
// a pass rests on the invariants it holds, not those it cannot tell); an inconclusive
// is false when the truth shows the fault hit a call in flight; a figure
// is false outside the truth's range, a lower bound false above it, and a
// figure or invariant the checker cannot tell is no claim. A client that
// exited non-zero must be named in the verdict, and every record the
// evidence cites must exist.
//
// [Programs] lists the corpus's programs, who wrote them and what each
// oracle can and cannot establish; TestCorpus builds them and chaosrun
// (CGO_ENABLED=0), runs the corpus with the chaosrun binary on the local
// runtime and, where every program runs there too, the docker runtime, and
// prints "N runs, M false verdicts, K false inconclusives" with a table of
// every disagreement.
package groundtruth

// Package check is chaosrun's checker: it turns what one experiment recorded
// (the clients' history, the side-effect ledger, the fault log and the run's
// timings) into a [Verdict], and matches verdicts against the experiment's
// expect: block ([Expectation]).
//
// [Judge] checks the assumption first: a fault must have hit a call in
// flight (fault_hit), or the verdict is inconclusive, never pass, since a
// chaos test whose fault missed proves nothing. Then it checks the
// invariants, each with a stable id: no_duplicate_side_effects,
// no_silent_event_loss, no_session_fork, no_orphaned_results and
// outcomes_resolved. Every result names the ledger records (by n) and history
// lines that prove it. Figures summarise the run under stable snake_case
// names ([FigureNames]).
//
// The invariants and figures read [Accounts]: [Account] joins the ledger
// (package sideeffects, what the system under test did) with the client
// histories (package targets/history, what the clients saw). The record
// formats live in those packages; the joining lives here.
//
// Judging is a pure function of its [Input], and [LoadRun] reads an
// experiment's result folder back into one, so a saved run is judged again
// offline with the same verdict.json.
package check

// Package timeline draws an experiment's records on one time axis, as a
// self-contained HTML page (timeline.html), and a run's experiments as an
// index page (index.html) linking to them.
//
// A page holds everything it shows: its script, its styles and its data are
// inline, and it names no http:// or https:// address, so it opens from a
// file path or a CI artifact with no network. The script is chaosrun's own
// (assets/timeline.js, embedded in the binary): a charting library would
// bring more code than the drawing needs, and none could be fetched at view
// time anyway.
//
// What is drawn comes from the checker, not from a second accounting: calls,
// sessions, forks, duplicate charges, orphaned results, events lost silently
// and gaps surfaced are those of [check.Account], the verdict and its
// evidence are [check.Judge]'s, and every other mark is one record of
// history.jsonl, ledger.jsonl, faults.jsonl or wire.jsonl (when the run has
// one), carrying its file and line (the ledger's and the wire's n) so the
// page shows the record a mark came from.
//
// The page has one lane per logical client: a row of calls (bars by
// outcome) and a row per session the client held (its span, SSE events as
// ticks, breaks, reconnects, resumes, gaps and side effects), and, when the
// run recorded the wire, a row of what crossed the fault proxy's edges for
// that client. Fault windows are shaded across the lanes. Runs with many
// clients are drawn as groups of clients whose rows aggregate their marks;
// the clients the evidence names are drawn on their own, and a group opens
// into its clients on a click.
package timeline

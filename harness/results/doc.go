// Package results owns a run's results folder once its experiments have
// been judged: run.json (a Run and its ExperimentResults), summary.md, the
// JUnit report, the index and timeline pages, the tallies of a repeated
// run, the shards of a split one, merging saved runs into one (Merge), and
// judging a saved run again offline (Rejudge), with or without some of its
// records. It runs nothing: package harness runs experiments and hands it
// their results.
package results

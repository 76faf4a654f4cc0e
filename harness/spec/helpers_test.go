package spec

import "github.com/chaosrun/chaosrun/harness/check"

func matchingVerdict() check.Verdict {
	return check.Verdict{
		Verdict:    check.Fail,
		Violations: []string{check.NoDuplicateSideEffects, check.NoSessionFork},
		Figures:    check.Figures{Duplicates: 2, Forks: 1},
	}
}

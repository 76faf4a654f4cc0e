package harness

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/harness/agent"
)

// limitedRuntime is a runtime whose agents may open limit files; it starts
// nothing.
type limitedRuntime struct {
	agent.Runtime
	limit uint64
}

func (r limitedRuntime) OpenFiles() uint64 { return r.limit }

func TestCheckOpenFiles(t *testing.T) {
	tests := []struct {
		name    string
		rt      agent.Runtime
		clients int
		want    string // "" when the workload fits
	}{
		{"fits", limitedRuntime{limit: 20000}, 3000, ""},
		{"ten thousand in twenty thousand files", limitedRuntime{limit: 20000}, 10000,
			"10000 clients keep 10000 connections through the proxy agent, which holds 6 descriptors for each"},
		{"the bound is named", limitedRuntime{limit: 20000}, 10000, "at most 3290 clients fit"},
		{"the limit is named", limitedRuntime{limit: 1024}, 1000, "agents here may open 1024"},
		{"a runtime without a shared limit is not checked", noLimitRuntime{}, 100000, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkOpenFiles(tc.rt, tc.clients)
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

type noLimitRuntime struct{}

func (noLimitRuntime) Start(context.Context, agent.Spec) (agent.Process, error) { return nil, nil }
func (noLimitRuntime) Close() error                                             { return nil }

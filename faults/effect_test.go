package faults_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/faults"
)

// TestEffectOf: what a logged injection did is read from its kind's params,
// never from a list of kind names a reader keeps.
func TestEffectOf(t *testing.T) {
	for _, tc := range []struct {
		entry faults.Entry
		want  faults.Effect
	}{
		{faults.Entry{Kind: faults.KindCrash, Target: "server", Params: map[string]any{"role": "server"}},
			faults.Effect{Process: "server", Stops: true, Kills: true, Answers: true, Cuts: true}},
		{faults.Entry{Kind: faults.KindRestart, Target: "server-2", Params: map[string]any{"role": "server", "replica": 2, "graceful": true}},
			faults.Effect{Process: "server-2", Stops: true, Answers: true, Cuts: true}},
		{faults.Entry{Kind: faults.KindPause, Target: "client", Params: map[string]any{"role": "client", "for": "1s"}},
			faults.Effect{Process: "client", Freezes: true}},
		{faults.Entry{Kind: faults.KindHTTPStatus, Target: "mcp", Params: map[string]any{"status": 503}}, faults.Effect{Answers: true}},
		{faults.Entry{Kind: faults.KindExpireSession, Target: "server"}, faults.Effect{Answers: true}},
		{faults.Entry{Kind: faults.KindPartition, Target: "mcp", Params: map[string]any{"for": "1s", "mode": "refuse"}}, faults.Effect{Cuts: true}},
		{faults.Entry{Kind: faults.KindPartition, Target: "mcp", Params: map[string]any{"for": "1s", "mode": "blackhole"}}, faults.Effect{}},
		{faults.Entry{Kind: faults.KindReset, Target: "mcp"}, faults.Effect{Cuts: true}},
		{faults.Entry{Kind: faults.KindIdleTimeout, Target: "mcp", Params: map[string]any{"idle": "1s"}}, faults.Effect{}},
		{faults.Entry{Kind: faults.KindBalancer, Target: "nginx"}, faults.Effect{Answers: true, Fronts: true}},
		{faults.Entry{Kind: faults.KindCrash, Target: "server", Error: "agent not running"}, faults.Effect{}},
	} {
		t.Run(tc.entry.Kind+"/"+tc.entry.Target, func(t *testing.T) {
			assert.Equal(t, tc.want, faults.EffectOf(tc.entry))
		})
	}
}

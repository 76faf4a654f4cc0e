package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/harness/spec"
)

func TestServerArgsGiveABringYourOwnServerOnlyItsEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		server spec.ServerPlan
		want   []string
	}{
		{"command", spec.ServerPlan{Target: "command", Command: []string{"./srv", "-v", "--port=1"}, RetentionEvents: 1000},
			[]string{"--target", "command", "--ledger", "http://ledger:8080", "--command=./srv", "--command=-v", "--command=--port=1"}},
		{"image", spec.ServerPlan{Target: "image", Image: "me/srv:1", RetentionEvents: 1000},
			[]string{"--target", "image", "--ledger", "http://ledger:8080", "--image", "me/srv:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, serverArgs(&spec.Plan{Server: tc.server}, "http://ledger:8080"))
		})
	}
	ref := serverArgs(&spec.Plan{Server: spec.ServerPlan{Target: "reference", RetentionEvents: 7, OnUnresumable: "gone"}}, "http://l")
	assert.Subset(t, ref, []string{"--retention-events", "7", "--on-unresumable", "gone"}, "the built-in servers get their knobs")
}

package harness

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/spec"
)

func TestServerArgsGiveABringYourOwnServerOnlyItsEnvironment(t *testing.T) {
	tests := []struct {
		name   string
		server spec.ServerPlan
		args   []string
		image  string
	}{
		{"command", spec.ServerPlan{Target: "command", Command: []string{"./srv", "-v", "--port=1"}, RetentionEvents: 1000},
			[]string{"--target", "command", "--command=./srv", "--command=-v", "--command=--port=1"}, ""},
		{"image", spec.ServerPlan{Target: "image", Image: "me/srv:1", RetentionEvents: 1000},
			[]string{"--target", "image"}, "me/srv:1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := serverSpec(&spec.Plan{Server: tc.server}, "http://ledger:8080")
			assert.Equal(t, agent.RoleServer, s.Role)
			assert.Equal(t, tc.args, s.Args)
			assert.Equal(t, "http://ledger:8080", s.LedgerURL, "the ledger is the runtime's to pass on, as a flag or in the environment")
			assert.Equal(t, tc.image, s.Image)
		})
	}
	ref := serverSpec(&spec.Plan{Server: spec.ServerPlan{Target: "reference", RetentionEvents: 7, OnUnresumable: "gone"}}, "http://l")
	assert.Subset(t, ref.Args, []string{"--retention-events", "7", "--on-unresumable", "gone"}, "the built-in servers get their knobs")
	assert.Empty(t, ref.Image)
}

func TestClientArgsStayShortWhateverTheNumberOfClients(t *testing.T) {
	x, err := spec.Parse("x.yaml", []byte(`name: many
description: The most clients an experiment may have.
workload:
  clients: 1000
  calls:
    - {tool: charge, args: {amount_cents: 1}, duration: 1s}
    - {tool: chatty, args: {events: 5}, duration: 1s}
expect: {verdict: pass}
`))
	if !assert.NoError(t, err) {
		return
	}
	p := x.Plan(spec.Overrides{})
	assert.Equal(t, 1000, p.Template.Clients)
	longest := 0
	for _, a := range clientArgs(p, "http://proxy:8666/mcp") {
		longest = max(longest, len(a))
	}
	assert.Less(t, longest, 4096, "one argument must stay far below Linux's 128 KiB limit")
}

package agent

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/internal/runclock"
)

func TestCommandLineCarriesTheSpecsClockAndLedger(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want []string
	}{
		{"client", Spec{Role: RoleClient, Args: []string{"--x"}},
			[]string{"agent", "client", "--state", "/s", "--x"}},
		{"server", Spec{Role: RoleServer, Serves: true, Clock: runclock.FromUnixNano(1700000000000000000),
			LedgerURL: "http://ledger:8080", Args: []string{"--target", "reference"}},
			[]string{"agent", "server", "--state", "/s", "--addr", "0.0.0.0:8080", "--base", "1700000000000000000",
				"--ledger", "http://ledger:8080", "--target", "reference"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.spec.CommandLine("/s", "0.0.0.0:8080"))
		})
	}
}

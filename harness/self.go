package harness

import (
	"context"
	"fmt"
	"os"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/local"
)

// LocalRuntime makes local runtimes that start agents from this very
// executable ("agent ROLE ..."): the chaosrun binary, or a test binary whose
// TestMain serves as the agents (roles.RunIfAgent).
func LocalRuntime() (RuntimeFactory, error) {
	bin, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("local runtime: %w", err)
	}
	return func(context.Context, string, string) (agent.Runtime, error) { return local.New(bin), nil }, nil
}

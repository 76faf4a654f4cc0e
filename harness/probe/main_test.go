package probe

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/roles"
	"github.com/chaosrun/chaosrun/wire/mcp"
	"github.com/stretchr/testify/require"
)

// TestMain lets the test binary serve as the experiments' agents and as the
// probe's helper programs.
func TestMain(m *testing.M) {
	roles.RunIfAgent()
	RunHelperIfAsked()
	os.Exit(m.Run())
}

// chatty is a short stream call: 200 events 2 ms apart.
func chatty(events int) lab.Call {
	return lab.Call{Tool: mcp.ToolChatty, Args: map[string]any{"events": events, "interval_ms": 2}, Duration: "8s"}
}

func charge() lab.Call {
	return lab.Call{Tool: mcp.ToolCharge, Args: map[string]any{"amount_cents": 4999}, Duration: "20s"}
}

// ownServer is one of chaosrun's own servers with the short calls.
func ownServer(spec map[string]any) Server {
	short := lab.Call{Tool: mcp.ToolChatty, Args: map[string]any{"events": 60, "interval_ms": 10}, Duration: "12s"}
	return Server{Spec: spec, Stream: chatty(200), Effect: charge(), TimeStream: &short}
}

// probeOf runs a probe in a temporary folder and returns its report and
// its checks by id (the first of each id).
func probeOf(t *testing.T, o Options) (*Report, map[string]Check) {
	t.Helper()
	o.Out = t.TempDir()
	if o.Parallel == 0 {
		o.Parallel = 2
	}
	o.Progress = testWriter{t}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	rep, err := Run(ctx, o)
	require.NoError(t, err)
	byID := map[string]Check{}
	for _, c := range rep.Checks {
		if _, seen := byID[c.Protocol+"/"+c.ID]; !seen {
			byID[c.Protocol+"/"+c.ID] = c
		}
		if _, seen := byID[c.ID]; !seen {
			byID[c.ID] = c
		}
	}
	return rep, byID
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(string(b))
	return len(b), nil
}

// buildShops builds the black-box shops of examples/blackbox.
func buildShops(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "../../examples/blackbox/shop-gosdk", "../../examples/blackbox/shop-mcpgo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	return dir
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs real experiments; skipped with -short")
	}
}

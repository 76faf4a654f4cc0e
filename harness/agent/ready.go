package agent

import (
	"context"
	"fmt"
	"time"
)

// AwaitURL waits for the line a serving agent prints first, its URL, and
// returns it. It fails if the incarnation exits first, prints nothing within
// timeout, or ctx ends; logPath, the agent's log, is named in the errors.
func AwaitURL(ctx context.Context, line <-chan string, exited <-chan struct{}, timeout time.Duration, logPath string) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case l := <-line:
		return l, nil
	case <-exited:
		return "", fmt.Errorf("agent exited before it was ready (see %s)", logPath)
	case <-timer.C:
		return "", fmt.Errorf("agent printed no URL within %s (see %s)", timeout, logPath)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

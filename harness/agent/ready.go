package agent

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// AwaitURL waits for the line a serving agent prints first, its URL, and
// returns it. It fails if the incarnation exits first, prints nothing within
// timeout, or ctx ends; logPath, the agent's log, is named in the errors,
// and an agent that exited is reported with the error it printed last
// (a bring-your-own server's own last words are in it), so the summary
// says why without sending the user to the log.
func AwaitURL(ctx context.Context, line <-chan string, exited <-chan struct{}, timeout time.Duration, logPath string) (string, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case l := <-line:
		return l, nil
	case <-exited:
		if last := lastError(logPath, time.Second); last != "" {
			return "", fmt.Errorf("agent exited before it was ready: %s (see %s)", last, logPath)
		}
		return "", fmt.Errorf("agent exited before it was ready (see %s)", logPath)
	case <-timer.C:
		return "", fmt.Errorf("agent printed no URL within %s (see %s)", timeout, logPath)
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// errorPrefix starts the line an agent prints when it fails.
const errorPrefix = "chaosrun: "

// logTail is how much of a log's end lastError reads.
const logTail = 64 << 10

// lastError returns the last line of the log at path that an agent's
// failure printed (it starts with "chaosrun: "), without the prefix; "" if
// there is none. A log copied from a container may still be arriving when
// the exit is seen, so it looks again for up to wait.
func lastError(path string, wait time.Duration) string {
	deadline := time.Now().Add(wait)
	for {
		if s := lastErrorOnce(path); s != "" || time.Now().After(deadline) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lastErrorOnce(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if info, err := f.Stat(); err == nil && info.Size() > logTail {
		_, _ = f.Seek(info.Size()-logTail, io.SeekStart)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return ""
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		if l := bytes.TrimSpace(lines[i]); bytes.HasPrefix(l, []byte(errorPrefix)) {
			return string(l[len(errorPrefix):])
		}
	}
	return ""
}

package sdkclient

import (
	"context"
	"fmt"
	"net/http"

	"github.com/chaosrun/chaosrun/targets/workload"
)

// Driver is one logical client's SDK client, as [Run] drives it.
type Driver interface {
	// Call makes one call of the workload and ends its record.
	Call(ctx context.Context, call workload.Call)
	// Close ends the SDK client's session.
	Close()
}

// Run drives one logical client through an SDK's own client: it makes the
// client's tracker, opens the driver with it and an HTTP client whose
// traffic the tracker observes, makes c's calls one after another until
// ctx ends, closes the driver and ends the history. It returns ctx.Err()
// when ctx ended the run early, and another error only when the history
// cannot be written or the driver cannot be opened. Errors name target and
// the client.
func Run(ctx context.Context, opts workload.Options, c workload.Client, target string,
	open func(tr *Tracker, httpc *http.Client) (Driver, error)) error {
	tr, err := NewTracker(opts, c.ID, target)
	if err != nil {
		return fmt.Errorf("%s client %s: %w", target, c.ID, err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	defer base.CloseIdleConnections()
	d, err := open(tr, &http.Client{Transport: tr.Transport(base)})
	if err != nil {
		return fmt.Errorf("%s client %s: %w", target, c.ID, err)
	}
	tr.Start()
	for _, call := range c.Calls {
		if ctx.Err() != nil {
			break
		}
		d.Call(ctx, call)
	}
	d.Close()
	detail := "done"
	if ctx.Err() != nil {
		detail = "stopped: " + ctx.Err().Error()
	}
	tr.Stop(detail)
	if err := tr.Err(); err != nil {
		return fmt.Errorf("%s client %s: %w", target, c.ID, err)
	}
	return ctx.Err()
}

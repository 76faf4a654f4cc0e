package sdkclient

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// driver records the calls Run makes and its close; cancel, if set, is
// called after the first call.
type driver struct {
	calls  []string
	closed bool
	cancel context.CancelFunc
}

func (d *driver) Call(_ context.Context, call workload.Call) {
	d.calls = append(d.calls, call.ID)
	if d.cancel != nil {
		d.cancel()
	}
}

func (d *driver) Close() { d.closed = true }

func TestRun(t *testing.T) {
	calls := []workload.Call{{ID: "c1"}, {ID: "c2"}}
	tests := []struct {
		name    string
		stop    bool // the context ends after the first call
		calls   []string
		detail  string
		wantErr error
	}{
		{"every call in order", false, []string{"c1", "c2"}, "done", nil},
		{"until the context ends", true, []string{"c1"}, "stopped: context canceled", context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf lockedBuffer
			opts := workload.Options{History: history.NewWriter(&buf, runclock.Start())}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := &driver{}
			if tc.stop {
				d.cancel = cancel
			}
			var httpc *http.Client
			err := Run(ctx, opts, workload.Client{ID: "alice", Calls: calls}, "test",
				func(tr *Tracker, hc *http.Client) (Driver, error) {
					httpc = hc
					return d, nil
				})
			assert.ErrorIs(t, err, tc.wantErr)
			assert.Equal(t, tc.calls, d.calls)
			assert.True(t, d.closed)
			require.NotNil(t, httpc)
			recs := buf.records(t)
			assert.Equal(t, []history.Kind{history.KindClientStart, history.KindClientStop}, kindsOf(recs))
			assert.Equal(t, "test", recs[0].Target)
			assert.Equal(t, tc.detail, recs[1].Detail)
		})
	}
}

func TestRunFailures(t *testing.T) {
	open := func(*Tracker, *http.Client) (Driver, error) { return nil, errors.New("no such SDK client") }
	err := Run(context.Background(), workload.Options{}, workload.Client{ID: "alice"}, "test", open)
	assert.ErrorIs(t, err, ErrNoHistory)
	assert.ErrorContains(t, err, "test client alice: ")

	var buf lockedBuffer
	opts := workload.Options{History: history.NewWriter(&buf, runclock.Start())}
	err = Run(context.Background(), opts, workload.Client{ID: "alice"}, "test", open)
	assert.EqualError(t, err, "test client alice: no such SDK client")
	assert.Empty(t, buf.records(t), "nothing recorded for a client that never started")
}

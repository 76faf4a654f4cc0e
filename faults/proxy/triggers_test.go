package proxy

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/wire"
)

func startTestAgent(t *testing.T) *Agent {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := Start(context.Background(), ln, Options{})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, a.Close()) })
	return a
}

// fireInitialize waits, by fired, for the trigger "init" while agent a
// observes record n: an initialize from client on connection conn. It
// returns the firing, failing the test if none comes within 5 s.
func fireInitialize(t *testing.T, fired func(context.Context, string) (trigger.Firing, error), a *Agent, n, conn int64, client string) trigger.Firing {
	t.Helper()
	got := make(chan trigger.Firing, 1)
	go func() {
		f, err := fired(context.Background(), "init")
		assert.NoError(t, err)
		got <- f
	}()
	a.engine.Observe(&wire.Record{N: n, Edge: wire.EdgeServer, Kind: wire.KindRequest, Conn: conn, Exchange: 1, Method: "POST",
		Messages: []wire.Message{{ID: "1", Method: "initialize", ClientName: client}}})
	select {
	case f := <-got:
		return f
	case <-time.After(5 * time.Second):
		t.Fatal("the firing never came")
		return trigger.Firing{}
	}
}

func TestClientArmsTriggersAndHearsTheirFirings(t *testing.T) {
	a := startTestAgent(t)
	c := NewClient(a.URL())
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	ctx := context.Background()
	require.NoError(t, c.Arm(ctx, []trigger.Trigger{
		{ID: "init", Event: trigger.EventInitialize},
		{ID: "resume", Event: trigger.EventResume},
	}))

	f := fireInitialize(t, c.Fired, a, 4, 1, "c1")
	assert.Equal(t, "init", f.ID)
	assert.Equal(t, int64(4), f.WireN)
	assert.Empty(t, f.Err)
	// A firing that came before the wait is kept for it.
	f, err := c.Fired(ctx, "init")
	require.NoError(t, err)
	assert.Equal(t, "init", f.ID)

	// A wait ends with the context.
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	_, err = c.Fired(short, "resume")
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

func TestClientHearsTriggersThatNeverFiredWhenTheAgentStops(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a, err := Start(context.Background(), ln, Options{})
	require.NoError(t, err)
	c := NewClient(a.URL())
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	require.NoError(t, c.Arm(context.Background(), []trigger.Trigger{{ID: "resume", Event: trigger.EventResume}}))
	require.NoError(t, a.Close())
	f, err := c.Fired(context.Background(), "resume")
	require.NoError(t, err)
	assert.Equal(t, trigger.ErrClosed.Error(), f.Err, "the engine's closing reaches the client before the stream ends")
	_, err = c.Fired(context.Background(), "unknown")
	assert.ErrorIs(t, err, errNoFirings)
}

func TestArmRejectsUnknownEvents(t *testing.T) {
	a := startTestAgent(t)
	c := NewClient(a.URL())
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	err := c.Arm(context.Background(), []trigger.Trigger{{ID: "x", Event: "soon"}})
	require.ErrorContains(t, err, `unknown event "soon"`)
	require.NoError(t, c.Healed(context.Background(), 0, 5))
}

package proxy

import (
	"context"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/wire"
)

// TestGroupFiresWhenAnyAgentFires: triggers are armed in every agent of a
// group, and the group's trigger fires with the first agent's firing; the
// other agents never fire it.
func TestGroupFiresWhenAnyAgentFires(t *testing.T) {
	a1, a2 := startTestAgent(t), startTestAgent(t)
	g := Group{NewClient(a1.URL()), NewClient(a2.URL())}
	t.Cleanup(func() { assert.NoError(t, g.Close()) })
	ctx := context.Background()
	require.NoError(t, g.Arm(ctx, []trigger.Trigger{{ID: "init", Event: trigger.EventInitialize}}))

	f := fireInitialize(t, g.Fired, a2, 6, 2, "c2")
	assert.Equal(t, "init", f.ID)
	assert.Equal(t, int64(6), f.WireN, "the firing agent's record")
	require.NoError(t, g.Healed(ctx, 0, 5))
}

// TestGroupFailsOnlyWhenNoAgentCanFire: a trigger that one agent can no
// longer fire (it stopped) still fires in another; once none can, the
// group says why.
func TestGroupFailsOnlyWhenNoAgentCanFire(t *testing.T) {
	a1, a2 := startTestAgent(t), startTestAgent(t)
	g := Group{NewClient(a1.URL()), NewClient(a2.URL())}
	t.Cleanup(func() { assert.NoError(t, g.Close()) })
	ctx := context.Background()
	require.NoError(t, g.Arm(ctx, []trigger.Trigger{{ID: "init", Event: trigger.EventInitialize}, {ID: "later", Event: trigger.EventResume}}))
	require.NoError(t, a1.Close())

	f := fireInitialize(t, g.Fired, a2, 2, 2, "c2")
	assert.Empty(t, f.Err, "the agent still running fired it")

	require.NoError(t, a2.Close())
	f, err := g.Fired(ctx, "later")
	require.NoError(t, err)
	assert.Equal(t, trigger.ErrClosed.Error(), f.Err)
}

func TestEmptyGroupIsAnError(t *testing.T) {
	assert.ErrorContains(t, Group{}.Refuse(context.Background(), wire.EdgeClient), "no proxy agent")
}

// TestGroupResetsEveryAgentsConnections: a group's reset resets the
// connections of every agent, and its window spans theirs.
func TestGroupResetsEveryAgentsConnections(t *testing.T) {
	var g Group
	var conns []net.Conn
	for range 2 {
		backend := serveOnce(t, func(c *net.TCPConn) { _, _ = io.Copy(io.Discard, c) })
		a, endpoint, _ := observedTCP(t, backend)
		g = append(g, NewClient(a.URL()))
		c, err := net.Dial("tcp", endpoint)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		conns = append(conns, c)
		require.Eventually(t, func() bool { return len(a.observers.tap.Conns()) == 1 }, 5*time.Second, time.Millisecond)
	}
	n, from, to, err := g.Reset(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	assert.LessOrEqual(t, from, to)
	for _, c := range conns {
		require.NoError(t, c.SetReadDeadline(time.Now().Add(5*time.Second)))
		_, err := c.Read(make([]byte, 1))
		assert.ErrorIs(t, err, syscall.ECONNRESET)
	}

	from, err = g.StartResets(context.Background(), "storm", time.Hour)
	require.NoError(t, err)
	assert.Positive(t, from)
	n, to, err = g.StopResets(context.Background(), "storm")
	require.NoError(t, err)
	assert.Zero(t, n, "nothing was due within the window")
	assert.GreaterOrEqual(t, to, from)
	_, _, err = g.StopResets(context.Background(), "storm")
	require.ErrorContains(t, err, "no resets storm")
}

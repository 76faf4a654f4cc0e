package runclock

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClockRoundTripsThroughUnixNano(t *testing.T) {
	c := New(time.Now().Add(-3 * time.Second))
	child, err := ParseUnixNano(c.String())
	require.NoError(t, err)
	assert.Equal(t, c.UnixNano(), child.UnixNano())
	parent, kid := c.Now(), child.Now()
	assert.InDelta(t, float64(parent), float64(kid), float64(50*time.Millisecond))
	assert.GreaterOrEqual(t, kid, 3*time.Second)
}

func TestParseUnixNanoRejectsGarbage(t *testing.T) {
	_, err := ParseUnixNano("yesterday")
	require.Error(t, err)
}

func TestAtInvertsNow(t *testing.T) {
	c := Start()
	off := 1500 * time.Millisecond
	assert.Equal(t, off, c.At(off).Sub(c.Base()))
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	assert.NoError(t, Sleep(ctx, time.Millisecond))
	assert.NoError(t, Sleep(ctx, 0), "nothing to wait for")
	cancel()
	assert.ErrorIs(t, Sleep(ctx, time.Hour), context.Canceled, "an ended context ends the wait")
	assert.ErrorIs(t, Sleep(ctx, 0), context.Canceled)

	c := Start()
	assert.True(t, c.SleepUntil(context.Background(), c.Now()+time.Millisecond))
	assert.False(t, c.SleepUntil(ctx, c.Now()+time.Hour))
}

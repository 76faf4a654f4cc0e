package faults_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/dur"
)

// dialled is a connection a test opened through the proxy, and when it
// began dialling, on the run's clock.
type dialled struct {
	conn  net.Conn
	start int64
}

// stillOpen reports whether c still echoes a byte through the proxy.
func stillOpen(c net.Conn) bool {
	if err := c.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return false
	}
	if _, err := c.Write([]byte{'?'}); err != nil {
		return false
	}
	_, err := io.ReadFull(c, make([]byte, 1))
	return err == nil
}

// readEnd reads c until it ends, and returns how.
func readEnd(c net.Conn) error {
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, c)
	if err == nil {
		return io.EOF
	}
	return err
}

// TestRunResetTouchesOnlyConnectionsOpenAtItsInstant dials connections
// through the proxy all along a one-event reset: every connection it
// reset began dialling before the instant the log gives it, and the one
// open since before the run is reset.
func TestRunResetTouchesOnlyConnectionsOpenAtItsInstant(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	open, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { open.Close() })
	roundTrip(t, open, "before")

	var (
		mu    sync.Mutex
		conns []dialled
	)
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := f.clock.Micros()
			c, err := net.Dial("tcp", f.listen)
			if err != nil {
				continue
			}
			mu.Lock()
			conns = append(conns, dialled{conn: c, start: start})
			mu.Unlock()
			time.Sleep(200 * time.Microsecond)
		}
	}()
	t.Cleanup(func() {
		for _, d := range conns {
			d.conn.Close()
		}
	})
	spec := faults.Spec{Kind: faults.KindReset, At: dur.Duration(30 * time.Millisecond), Params: params(t, "reset", "{}")}
	entries, err := f.run(context.Background(), []faults.Spec{spec}, nil)
	require.NoError(t, err)
	time.Sleep(10 * time.Millisecond)
	close(stop)
	<-stopped

	require.Len(t, entries, 1)
	e := entries[0]
	assert.Contains(t, e.Detail, "every one open at the instant")
	assert.False(t, stillOpen(open), "the connection open since before the run was reset")
	before, after := 0, 0
	for _, d := range conns {
		if d.start > e.StartUS {
			after++
			assert.True(t, stillOpen(d.conn), "a connection dialled at %d µs, after the reset's instant [%d, %d] µs, was reset", d.start, e.StartUS, e.EndUS)
		} else {
			before++
		}
	}
	t.Logf("%d connections dialled before the instant, %d after; window %d µs", before, after, e.EndUS-e.StartUS)
	require.Positive(t, after, "connections were dialled after the instant")
}

// TestRunResetLosesWhatALatencyHolds resets a connection while a latency
// toxic holds bytes the server sent on it: they are lost with the
// connection, as a real reset loses what was not yet delivered, instead of
// being flushed to the client ahead of the reset.
func TestRunResetLosesWhatALatencyHolds(t *testing.T) {
	wrote := make(chan struct{})
	var once sync.Once
	f := newFixture(t, serve(t, func(c net.Conn) {
		if _, err := c.Read(make([]byte, 64)); err != nil {
			return
		}
		_, _ = io.WriteString(c, "held")
		once.Do(func() { close(wrote) })
		_, _ = io.Copy(io.Discard, c)
	}))
	trg := newFakeTriggers()
	f.triggers = trg
	specs := []faults.Spec{
		{Kind: faults.KindLatency, Params: params(t, "latency", "{latency: 10s}")},
		{Kind: faults.KindReset, When: &trigger.When{Event: trigger.EventRequest}, Params: params(t, "reset", "{}")},
	}
	injected, reset := make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() {
		_, err := f.run(ctx, specs, func(e faults.Event) {
			switch {
			case e.Phase != faults.PhaseInjected:
			case e.Kind == faults.KindLatency:
				close(injected)
			case e.Kind == faults.KindReset:
				close(reset)
			}
		})
		ran <- err
	}()
	<-injected
	conn, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	_, err = io.WriteString(conn, "ping")
	require.NoError(t, err)
	<-wrote // the latency holds the answer for 10 s
	trg.ch(faults.TriggerID(1)) <- trigger.Firing{ID: faults.TriggerID(1), AtUS: f.clock.Micros()}
	<-reset

	require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
	got, err := io.ReadAll(conn)
	assert.Empty(t, string(got), "bytes the latency held were delivered ahead of the reset")
	assert.True(t, errors.Is(err, syscall.ECONNRESET), "the client saw %v, want a reset", err)
	cancel()
	require.NoError(t, <-ran, "the latency's heal drains what it held for the reset connection")
}

// TestRunResetStormResetsWhatOpensInItsWindow: a reset with a window
// resets the connection open at its start and one opened during it, each
// after its delay, and not one opened after it healed.
func TestRunResetStormResetsWhatOpensInItsWindow(t *testing.T) {
	f := newFixture(t, serve(t, echo))
	first, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { first.Close() })
	roundTrip(t, first, "before")

	spec := faults.Spec{Kind: faults.KindReset, Params: params(t, "reset", "{after: 20ms, for: 300ms}")}
	var during net.Conn
	entries, err := f.run(context.Background(), []faults.Spec{spec}, func(e faults.Event) {
		if e.Phase != faults.PhaseInjected {
			return
		}
		c, err := net.Dial("tcp", f.listen)
		if !assert.NoError(t, err) {
			return
		}
		during = c
		roundTrip(t, c, "during")
		assert.ErrorIs(t, readEnd(c), syscall.ECONNRESET, "reset 20 ms after it opened")
	})
	require.NoError(t, err)
	require.NotNil(t, during)
	t.Cleanup(func() { during.Close() })
	assert.False(t, stillOpen(first), "the connection open at the start was reset")

	after, err := net.Dial("tcp", f.listen)
	require.NoError(t, err)
	t.Cleanup(func() { after.Close() })
	assert.True(t, stillOpen(after), "no reset after the heal")
	require.Len(t, entries, 1)
	assert.Contains(t, entries[0].Detail, "healed: 2 connections reset")
	assert.GreaterOrEqual(t, entries[0].EndUS-entries[0].StartUS, (300 * time.Millisecond).Microseconds())
}

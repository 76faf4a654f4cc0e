package agent

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeInc is an incarnation the test ends by hand (exit) or through Stop.
type fakeInc struct {
	exited   chan struct{}
	code     int
	readyErr error // what Ready answers; nil = ready

	mu     sync.Mutex
	stops  []bool // the graceful argument of every Stop
	paused bool
}

func newFakeInc() *fakeInc { return &fakeInc{exited: make(chan struct{})} }

// exit ends the incarnation with code, once.
func (f *fakeInc) exit(code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !isClosed(f.exited) {
		f.code = code
		close(f.exited)
	}
}

func (f *fakeInc) Exited() <-chan struct{}     { return f.exited }
func (f *fakeInc) ExitCode() int               { return f.code }
func (f *fakeInc) Ready(context.Context) error { return f.readyErr }

func (f *fakeInc) Stop(_ context.Context, graceful bool) error {
	f.mu.Lock()
	f.stops = append(f.stops, graceful)
	f.mu.Unlock()
	code := -1 // SIGKILL
	if graceful {
		code = 0
	}
	f.exit(code)
	return nil
}

func (f *fakeInc) Pause(context.Context) error  { f.setPaused(true); return nil }
func (f *fakeInc) Resume(context.Context) error { f.setPaused(false); return nil }

func (f *fakeInc) setPaused(p bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paused = p
}

func (f *fakeInc) stopped() []bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]bool(nil), f.stops...)
}

// fakeLauncher launches fakeIncs and keeps them in order. next, when set,
// shapes the next incarnation before the Lifecycle sees it.
type fakeLauncher struct {
	mu   sync.Mutex
	incs []*fakeInc
	next func(*fakeInc) error
}

func (f *fakeLauncher) launch(context.Context) (Incarnation, error) {
	inc := newFakeInc()
	f.mu.Lock()
	next := f.next
	f.next = nil
	f.mu.Unlock()
	if next != nil {
		if err := next(inc); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	f.incs = append(f.incs, inc)
	f.mu.Unlock()
	return inc, nil
}

// inc returns the i-th incarnation launched.
func (f *fakeLauncher) inc(i int) *fakeInc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.incs[i]
}

// waitGone is the time a Wait that must find nothing is given.
const waitGone = 50 * time.Millisecond

// drain reads every own exit Wait reports until it has nothing for waitGone.
func drain(t *testing.T, l *Lifecycle) []int {
	t.Helper()
	var codes []int
	for {
		ctx, cancel := context.WithTimeout(context.Background(), waitGone)
		code, err := l.Wait(ctx)
		cancel()
		if err != nil {
			require.ErrorIs(t, err, context.DeadlineExceeded)
			return codes
		}
		codes = append(codes, code)
	}
}

// awaitReported waits until the lifecycle holds n unread own exits.
func awaitReported(t *testing.T, l *Lifecycle, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.exits) == n
	}, 5*time.Second, time.Millisecond)
}

func TestLifecycleReportsOwnExitsOnce(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, l *Lifecycle, f *fakeLauncher)
		want []int // the own exits Wait reports, in order, and nothing more
	}{
		{"a planned stop is not an own exit", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			require.NoError(t, l.Stop(ctx, true))
			assert.Equal(t, []bool{true}, f.inc(0).stopped())
		}, nil},
		{"a crash the harness caused is not an own exit", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			require.NoError(t, l.Restart(ctx, false))
			assert.Equal(t, []bool{false}, f.inc(0).stopped())
		}, nil},
		{"a crash after a restart is reported once", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			require.NoError(t, l.Restart(ctx, true))
			f.inc(1).exit(3)
		}, []int{3}},
		{"Wait after the exit returns its code", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			f.inc(0).exit(5)
			awaitReported(t, l, 1)
		}, []int{5}},
		{"a stop after an own exit leaves it one", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			f.inc(0).exit(2)
			awaitReported(t, l, 1)
			require.NoError(t, l.Stop(ctx, true))
			assert.Empty(t, f.inc(0).stopped(), "nothing to stop")
		}, []int{2}},
		{"own exits are kept in order however many go unread", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			for code := 1; code <= 20; code++ {
				f.inc(code - 1).exit(code)
				awaitReported(t, l, code)
				require.NoError(t, l.Restart(ctx, false))
			}
		}, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}},
		{"an exit before ready is Start's error, not Wait's", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			f.next = func(inc *fakeInc) error {
				inc.exit(9)
				inc.readyErr = errors.New("exited before it was ready")
				return nil
			}
			require.ErrorContains(t, l.Restart(ctx, true), "restart server: exited before it was ready")
		}, nil},
		{"a start that does not get ready is killed", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			f.next = func(inc *fakeInc) error { inc.readyErr = errors.New("no URL"); return nil }
			require.ErrorContains(t, l.Restart(ctx, true), "no URL")
			assert.Equal(t, []bool{false}, f.inc(1).stopped(), "killed")
			require.ErrorIs(t, l.Pause(ctx), ErrNotRunning)
		}, nil},
		{"a launch that fails leaves nothing to report", func(t *testing.T, l *Lifecycle, f *fakeLauncher) {
			f.next = func(*fakeInc) error { return errors.New("no such binary") }
			require.ErrorContains(t, l.Restart(ctx, true), "restart server: no such binary")
			require.NoError(t, l.Stop(ctx, true))
		}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeLauncher{}
			l := NewLifecycle(RoleServer, f.launch)
			require.NoError(t, l.Start(ctx))
			tc.run(t, l, f)
			assert.Equal(t, tc.want, drain(t, l))
		})
	}
}

func TestLifecycleStopAndCloseAreIdempotent(t *testing.T) {
	ctx := context.Background()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleServer, f.launch)
	require.NoError(t, l.Stop(ctx, true), "nothing to stop before the first start")
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.Stop(ctx, true))
	require.NoError(t, l.Stop(ctx, false))
	require.NoError(t, l.Close(ctx))
	require.NoError(t, l.Close(ctx))
	assert.Equal(t, []bool{true}, f.inc(0).stopped(), "only the first Stop had something to stop")

	require.ErrorIs(t, l.Start(ctx), ErrClosed)
	err := l.Restart(ctx, false)
	require.ErrorIs(t, err, ErrClosed)
	assert.EqualError(t, err, "restart server: agent closed")
	assert.Len(t, f.incs, 1, "a closed lifecycle launches nothing")
	assert.Empty(t, drain(t, l))
}

func TestLifecycleCloseKillsTheRunningIncarnation(t *testing.T) {
	ctx := context.Background()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleClient, f.launch)
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.Close(ctx))
	assert.True(t, isClosed(f.inc(0).Exited()), "Close returns once the incarnation has exited")
	assert.Equal(t, []bool{false}, f.inc(0).stopped(), "killed, not drained")
	assert.Empty(t, drain(t, l), "Close is a planned exit")
}

func TestLifecycleCloseDuringALaunchKillsWhatItLaunches(t *testing.T) {
	ctx := context.Background()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleServer, f.launch)
	launching, closed := make(chan struct{}), make(chan struct{})
	f.next = func(*fakeInc) error {
		close(launching)
		<-closed
		return nil
	}
	started := make(chan error, 1)
	go func() { started <- l.Start(ctx) }()
	<-launching
	require.NoError(t, l.Close(ctx), "nothing runs yet")
	close(closed)
	require.ErrorIs(t, <-started, ErrClosed)
	assert.Equal(t, []bool{false}, f.inc(0).stopped(), "the incarnation launched past Close is killed")
	assert.Empty(t, drain(t, l))
}

func TestLifecyclePausesOnlyARunningIncarnation(t *testing.T) {
	ctx := context.Background()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleServer, f.launch)
	require.ErrorIs(t, l.Pause(ctx), ErrNotRunning, "before the first start")
	require.NoError(t, l.Start(ctx))
	require.NoError(t, l.Pause(ctx))
	assert.True(t, f.inc(0).paused)
	require.NoError(t, l.Resume(ctx))
	assert.False(t, f.inc(0).paused)
	f.inc(0).exit(1)
	require.ErrorIs(t, l.Pause(ctx), ErrNotRunning, "after it exited")
	require.ErrorIs(t, l.Resume(ctx), ErrNotRunning)
}

func TestLifecycleLeavesNoGoroutineOnUnreadExits(t *testing.T) {
	ctx := context.Background()
	before := runtime.NumGoroutine()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleClient, f.launch)
	require.NoError(t, l.Start(ctx))
	for i := range 40 {
		f.inc(i).exit(i)
		require.NoError(t, l.Restart(ctx, false))
	}
	require.NoError(t, l.Close(ctx))
	// Polled by hand: require.Eventually runs its condition on a goroutine.
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "every watcher ends once its incarnation has exited, read or not")
	awaitReported(t, l, 40)
}

func TestWaitWaitsForAnOwnExit(t *testing.T) {
	ctx := context.Background()
	f := &fakeLauncher{}
	l := NewLifecycle(RoleClient, f.launch)
	require.NoError(t, l.Start(ctx))
	got := make(chan int, 1)
	go func() {
		code, err := l.Wait(ctx)
		assert.NoError(t, err)
		got <- code
	}()
	time.Sleep(10 * time.Millisecond) // let Wait block first
	f.inc(0).exit(7)
	select {
	case code := <-got:
		assert.Equal(t, 7, code)
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return the exit that came while it waited")
	}
}

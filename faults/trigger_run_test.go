package faults_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/runclock"
)

// fakeTriggers stands in for the proxy agent: a test fires triggers by id.
type fakeTriggers struct {
	mu     sync.Mutex
	armed  []trigger.Trigger
	fires  map[string]chan trigger.Firing
	healed []int
}

func newFakeTriggers() *fakeTriggers { return &fakeTriggers{fires: map[string]chan trigger.Firing{}} }

func (f *fakeTriggers) ch(id string) chan trigger.Firing {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fires[id] == nil {
		f.fires[id] = make(chan trigger.Firing, 1)
	}
	return f.fires[id]
}

func (f *fakeTriggers) Arm(_ context.Context, ts []trigger.Trigger) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = append(f.armed, ts...)
	return nil
}

func (f *fakeTriggers) Fired(ctx context.Context, id string) (trigger.Firing, error) {
	c := f.ch(id)
	select {
	case got := <-c:
		c <- got // every repetition of the fault hears the same firing
		return got, nil
	case <-ctx.Done():
		return trigger.Firing{}, ctx.Err()
	}
}

func (f *fakeTriggers) Healed(_ context.Context, index int, _ int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.healed = append(f.healed, index)
	return nil
}

func runWithTriggers(t *testing.T, ctx context.Context, clock runclock.Clock, trg faults.Triggers, procs *fakeProcesses, specs []faults.Spec) ([]faults.Entry, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "faults.jsonl")
	log, err := faults.CreateLog(path)
	require.NoError(t, err)
	env := faults.Env{Clock: clock, WorkloadStart: clock.Now(), Processes: procs, Log: log, Triggers: trg}
	runErr := faults.Run(ctx, env, faults.Plan(specs, 1, 1))
	require.NoError(t, log.Close())
	entries, err := faults.LoadLog(path)
	require.NoError(t, err)
	return entries, runErr
}

func TestRunInjectsWhenTheTriggerFires(t *testing.T) {
	clock := runclock.Start()
	trg, procs := newFakeTriggers(), &fakeProcesses{}
	specs := []faults.Spec{{
		Kind: faults.KindCrash, At: dur.Duration(40 * time.Millisecond), Params: &faults.Crash{Role: "server"},
		When:   &trigger.When{Event: trigger.EventToolsCall, Tool: "charge", After: dur.Duration(time.Second)},
		Repeat: &faults.Repeat{Every: dur.Duration(40 * time.Millisecond), Count: 2},
	}}
	firedAt := make(chan int64, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		at := clock.Micros()
		firedAt <- at
		trg.ch(faults.TriggerID(0)) <- trigger.Firing{ID: faults.TriggerID(0), AtUS: at, WireN: 7, Detail: "tools/call charge in flight for 1s (wire record 7)"}
	}()
	entries, err := runWithTriggers(t, context.Background(), clock, trg, procs, specs)
	require.NoError(t, err)
	at := <-firedAt

	require.Len(t, trg.armed, 1, "the plan's one trigger is armed once, for both repetitions")
	assert.Equal(t, trigger.Trigger{ID: "fault-0", Event: trigger.EventToolsCall, Tool: "charge", After: time.Second, Nth: 1, Edge: "server"}, trg.armed[0])
	require.Len(t, entries, 2)
	for k, e := range entries {
		assert.Empty(t, e.Error)
		assert.Equal(t, "tools_call charge in flight 1s at the server edge", e.Trigger)
		assert.Equal(t, "tools/call charge in flight for 1s (wire record 7)", e.FiredBy)
		assert.Equal(t, at, e.FiredUS)
		assert.GreaterOrEqual(t, e.StartUS, at+int64(40+40*e.Repeat)*1000, "repetition %d counts from the firing", k)
	}
	assert.Equal(t, []string{"restart kill server", "restart kill server"}, procs.list())
}

func TestRunLogsATriggerThatNeverFired(t *testing.T) {
	trg, procs := newFakeTriggers(), &fakeProcesses{}
	specs := []faults.Spec{{
		Kind: faults.KindCrash, Params: &faults.Crash{Role: "server"},
		When:   &trigger.When{Event: trigger.EventResume},
		Repeat: &faults.Repeat{Every: dur.Duration(time.Millisecond), Count: 3},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	entries, err := runWithTriggers(t, ctx, runclock.Start(), trg, procs, specs)
	require.ErrorIs(t, err, faults.ErrInjection)
	require.Len(t, entries, 1, "one entry for the fault, not one per repetition")
	assert.Contains(t, entries[0].Error, "trigger never fired (resume at the server edge)")
	assert.Empty(t, procs.list(), "nothing was injected")
}

func TestRunWithoutTriggersLogsWhyAGatedFaultCannotFire(t *testing.T) {
	specs := []faults.Spec{{Kind: faults.KindCrash, Params: &faults.Crash{Role: "server"}, When: &trigger.When{Event: trigger.EventInitialize}}}
	entries, err := runWithTriggers(t, context.Background(), runclock.Start(), nil, &fakeProcesses{}, specs)
	require.ErrorIs(t, err, faults.ErrInjection)
	require.Len(t, entries, 1)
	assert.Contains(t, entries[0].Error, "no protocol triggers in this run")
}

func TestRunTellsTheTriggersOfEveryHeal(t *testing.T) {
	trg, procs := newFakeTriggers(), &fakeProcesses{}
	specs := []faults.Spec{
		{Kind: faults.KindPause, Params: &faults.Pause{Role: "server", For: dur.Duration(20 * time.Millisecond)}},
		{Kind: faults.KindCrash, Params: &faults.Crash{Role: "client"}},
	}
	_, err := runWithTriggers(t, context.Background(), runclock.Start(), trg, procs, specs)
	require.NoError(t, err)
	assert.Equal(t, []int{0}, trg.healed, "the pause healed; the crash is instant and has no heal")
}

// TestRunIsReadyOnceItsTriggersAreArmed: Env.Ready, which a runner waits
// for before it starts the workload, comes after the triggers are armed
// and before any trigger can fire, once.
func TestRunIsReadyOnceItsTriggersAreArmed(t *testing.T) {
	clock := runclock.Start()
	trg := newFakeTriggers()
	log, err := faults.CreateLog(filepath.Join(t.TempDir(), "faults.jsonl"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = log.Close() })
	armedAtReady := make(chan int, 2)
	env := faults.Env{Clock: clock, WorkloadStart: clock.Now(), Processes: &fakeProcesses{}, Log: log, Triggers: trg, Ready: func() {
		trg.mu.Lock()
		armedAtReady <- len(trg.armed)
		trg.mu.Unlock()
	}}
	specs := []faults.Spec{{Kind: faults.KindCrash, Params: &faults.Crash{Role: "server"},
		When: &trigger.When{Event: trigger.EventToolsCall, Tool: "charge"}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- faults.Run(ctx, env, faults.Plan(specs, 1, 1)) }()
	assert.Equal(t, 1, <-armedAtReady, "the trigger is armed before the run says it is ready")
	cancel()
	<-done
	assert.Empty(t, armedAtReady, "ready once")
}

package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/internal/jsonl"
	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Task statuses of the io.modelcontextprotocol/tasks extension.
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// errInterruptedTask is the error of a task a previous process was running
// when it stopped: whether its side effect happened is unknown.
var errInterruptedTask = mcp.Error{Code: mcp.CodeInternalError, Message: "interrupted_by_restart"}

// task is one task's durable state. Fields are the journal's.
type task struct {
	ID        string          `json:"task_id"`
	Client    string          `json:"client"`
	RequestID string          `json:"request_id"`
	Tool      string          `json:"tool"`
	OrderID   string          `json:"order_id,omitempty"`
	Status    string          `json:"status"`
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
	TTL       time.Duration   `json:"ttl"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *mcp.Error      `json:"error,omitempty"`
	// Owner is the replica running the task, in a shared store.
	Owner string `json:"owner,omitempty"`
	// Legacy marks a task of the experimental 2025-11-25 tasks, and
	// Session the session its tools/call came on.
	Legacy  bool   `json:"legacy,omitempty"`
	Session string `json:"session,omitempty"`
}

func (t *task) terminal() bool { return t.Status != taskWorking }

func (t *task) expired(now time.Time) bool { return t.TTL > 0 && now.After(t.Created.Add(t.TTL)) }

// taskStore keeps tasks in memory and, for the file store, journals every
// change with fsync before anyone can see it, so a task a client was told
// of survives a restart (SIGKILL included). The redis store journals every
// change to a journal the replicas share ([store.Shared]) before anyone can
// see it, and a replica asked about a task catches up on the journal
// first, so a poll that lands on another replica than the one running the
// task is answered; only the running replica can cancel it.
type taskStore struct {
	mu      sync.Mutex
	tasks   map[string]*task
	cancels map[string]chan struct{} // running tasks' cancellation
	done    map[string]chan struct{} // closed when the task is terminal or forgotten
	f       *os.File                 // nil: memory
	shared  store.Shared             // nil: not shared
	owner   string                   // this replica, in a shared store
	readMu  sync.Mutex               // one reader of the shared journal at a time
}

// openSharedTaskStore opens a task store on a journal the replicas share,
// replaying it: a task owner (this replica, by its stable name) left working
// when it stopped fails with interrupted_by_restart.
func openSharedTaskStore(j store.Shared, owner string) (*taskStore, error) {
	ts := &taskStore{tasks: map[string]*task{}, cancels: map[string]chan struct{}{}, done: map[string]chan struct{}{}, shared: j, owner: owner}
	if err := ts.catchUp(); err != nil {
		return nil, err
	}
	if err := ts.interrupt(owner); err != nil {
		return nil, err
	}
	return ts, nil
}

// interrupt fails, durably, every task owner left working when its process
// stopped; "" is every task (the file store's single process). The caller
// owns ts.
func (ts *taskStore) interrupt(owner string) error {
	for _, t := range ts.tasks {
		if !t.terminal() && (owner == "" || t.Owner == owner) {
			t.Status, t.Error, t.Updated = taskFailed, &errInterruptedTask, time.Now()
			if err := ts.write(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// sharedReadTimeout bounds one catch-up read of the shared journal.
const sharedReadTimeout = 5 * time.Second

// catchUp applies every record of the shared journal not read yet. It
// reads without mu, so a slow journal holds up no other request, and
// applies under it; the caller must not hold mu.
func (ts *taskStore) catchUp() error {
	if ts.shared == nil {
		return nil
	}
	ts.readMu.Lock()
	defer ts.readMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
	defer cancel()
	var read []task
	err := ts.shared.Read(ctx, 0, func(rec []byte) error {
		var t task
		if json.Unmarshal(rec, &t) == nil && t.ID != "" { // else not a task record: nothing to apply
			read = append(read, t)
		}
		return nil
	})
	ts.mu.Lock()
	for _, t := range read {
		if old := ts.tasks[t.ID]; old != nil && old.terminal() && !t.terminal() {
			continue // a terminal state is final
		}
		ts.tasks[t.ID] = &t
	}
	ts.mu.Unlock()
	if err != nil {
		return fmt.Errorf("task store: read the shared journal: %w", err)
	}
	return nil
}

// openTaskStore opens the memory store (path "") or the file journal at
// path, replaying it: a task left working by the previous process fails
// with interrupted_by_restart.
func openTaskStore(path string) (*taskStore, error) {
	ts := &taskStore{tasks: map[string]*task{}, cancels: map[string]chan struct{}{}, done: map[string]chan struct{}{}}
	if path == "" {
		return ts, nil
	}
	// A torn last line is cut off: its write was never acknowledged.
	f, err := jsonl.OpenAppend(path)
	if err != nil {
		return nil, fmt.Errorf("task store: %w", err)
	}
	tasks, err := readTasks(f)
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("task store: %s: %w", path, err)
	}
	for _, t := range tasks {
		ts.tasks[t.ID] = t
	}
	ts.f = f
	if err := ts.interrupt(""); err != nil {
		_ = f.Close()
		return nil, err
	}
	return ts, nil
}

// readTasks reads a task journal, every change of a task a line, under
// the rule of package internal/jsonl: a torn last line is dropped, any
// other line that does not parse is an error naming it.
func readTasks(r io.Reader) ([]*task, error) {
	return jsonl.Read(r, mcp.MaxEventBytes, func(b []byte) (*task, error) {
		t := &task{}
		return t, json.Unmarshal(b, t)
	})
}

// write journals t (the file and shared stores); the caller holds mu or
// owns ts.
func (ts *taskStore) write(t *task) error {
	if ts.f == nil && ts.shared == nil {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("task store: %w", err)
	}
	if ts.shared != nil {
		ctx, cancel := context.WithTimeout(context.Background(), sharedReadTimeout)
		defer cancel()
		if err := ts.shared.Append(ctx, b); err != nil {
			return fmt.Errorf("task store: %w", err)
		}
		return nil
	}
	if _, err := ts.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("task store: %w", err)
	}
	if err := ts.f.Sync(); err != nil {
		return fmt.Errorf("task store: %w", err)
	}
	return nil
}

func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// create stores a new working task, durably before it returns, as the
// extension requires of a CreateTaskResult.
func (ts *taskStore) create(t task) (*task, <-chan struct{}, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.ID, t.Status, t.Owner = newTaskID(), taskWorking, ts.owner
	t.Created = time.Now()
	t.Updated = t.Created
	if err := ts.write(&t); err != nil {
		return nil, nil, err
	}
	cancel := make(chan struct{})
	ts.tasks[t.ID], ts.cancels[t.ID], ts.done[t.ID] = &t, cancel, make(chan struct{})
	cp := t
	return &cp, cancel, nil
}

// finish records a task's terminal state.
func (ts *taskStore) finish(id, status string, result json.RawMessage, rpcErr *mcp.Error) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
	delete(ts.cancels, id)
	if t == nil || t.terminal() {
		return nil
	}
	t.Status, t.Result, t.Error, t.Updated = status, result, rpcErr, time.Now()
	err := ts.write(t)
	ts.settled(id)
	return err
}

// settled wakes whoever waits for the task to end; the caller holds mu.
func (ts *taskStore) settled(id string) {
	if c, ok := ts.done[id]; ok {
		close(c)
		delete(ts.done, id)
	}
}

// errTaskNotFound and errTaskExpired answer a task id the store does not
// (or no longer) hold.
var (
	errTaskNotFound = errors.New("task not found")
	errTaskExpired  = errors.New("task has expired")
	// errTaskElsewhere answers tasks/cancel for a task another replica
	// runs (a shared store): only that one can stop it.
	errTaskElsewhere = errors.New("task is running on another replica")
	// errTaskTerminal answers a 2025-11-25 tasks/cancel of a task already
	// ended.
	errTaskTerminal = errors.New("task is already in a terminal status")
)

// get returns a copy of the task, forgetting it once its TTL has passed.
// A shared store first catches up on what the other replicas wrote.
func (ts *taskStore) get(id string) (task, error) {
	ts.mu.Lock()
	t := ts.tasks[id]
	stale := ts.shared != nil && (t == nil || !t.terminal())
	ts.mu.Unlock()
	if stale {
		if err := ts.catchUp(); err != nil {
			return task{}, err
		}
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t = ts.tasks[id]
	switch {
	case t == nil:
		return task{}, errTaskNotFound
	case t.expired(time.Now()):
		delete(ts.tasks, id)
		return task{}, errTaskExpired
	}
	return *t, nil
}

// cancel signals a running task's cancellation; it reports whether the
// task is known. With mark (2025-11-25 tasks) the task turns cancelled,
// durably, before cancel returns, and stays so whatever its tool does
// next; a task already terminal is errTaskTerminal.
func (ts *taskStore) cancel(id string, mark bool) (task, error) {
	t, err := ts.get(id)
	if err != nil {
		return task{}, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	c, ok := ts.cancels[id]
	if !ok && !t.terminal() && ts.shared != nil && t.Owner != ts.owner {
		return task{}, errTaskElsewhere
	}
	if mark {
		cur := ts.tasks[id]
		switch {
		case cur == nil:
			return task{}, errTaskNotFound
		case cur.terminal():
			return *cur, fmt.Errorf("%w '%s'", errTaskTerminal, cur.Status)
		}
		cur.Status, cur.Updated = taskCancelled, time.Now()
		if err := ts.write(cur); err != nil {
			return task{}, err
		}
		ts.settled(id)
		t = *cur
	}
	if ok {
		close(c)
		delete(ts.cancels, id)
	}
	return t, nil
}

// wait returns the task once it is terminal, or the error that says it is
// gone. It wakes when the task ends on this server, and otherwise looks
// again every poll (a task another replica runs, in a shared store). It
// returns ctx's error when ctx ends.
func (ts *taskStore) wait(ctx context.Context, id string, poll time.Duration) (task, error) {
	for {
		t, err := ts.get(id)
		if err != nil || t.terminal() {
			return t, err
		}
		ts.mu.Lock()
		done := ts.done[id] // nil: not run here, looked at again after poll
		ts.mu.Unlock()
		timer := time.NewTimer(poll)
		select {
		case <-done:
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return task{}, ctx.Err()
		}
		timer.Stop()
	}
}

// list returns the tasks of one shape (legacy or not) not yet expired,
// oldest first (then by id), after those whose id is after (a page's
// last), at most limit of them, and whether more follow.
func (ts *taskStore) list(legacy bool, after string, limit int) ([]task, bool, error) {
	if err := ts.catchUp(); err != nil {
		return nil, false, err
	}
	ts.mu.Lock()
	now := time.Now()
	var all []task
	for _, t := range ts.tasks {
		if t.Legacy == legacy && !t.expired(now) {
			all = append(all, *t)
		}
	}
	ts.mu.Unlock()
	slices.SortFunc(all, func(a, b task) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if after != "" {
		i := slices.IndexFunc(all, func(t task) bool { return t.ID == after })
		if i < 0 {
			return nil, false, errBadCursor
		}
		all = all[i+1:]
	}
	if len(all) > limit {
		return all[:limit], true, nil
	}
	return all, false, nil
}

// errBadCursor answers a tasks/list cursor that names no task listed.
var errBadCursor = errors.New("invalid cursor")

// dropAll forgets every task, and returns their ids, sorted. The file
// journal keeps them: a restart brings them back, as a store that was only
// unreachable would.
func (ts *taskStore) dropAll() []string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ids := make([]string, 0, len(ts.tasks))
	for id := range ts.tasks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	clear(ts.tasks)
	clear(ts.cancels)
	for id := range ts.done {
		ts.settled(id)
	}
	return ids
}

func (ts *taskStore) close() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.shared != nil {
		err := ts.shared.Close()
		ts.shared = nil
		return err
	}
	if ts.f == nil {
		return nil
	}
	err := ts.f.Close()
	ts.f = nil
	return err
}

package server

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/targets/mcpwire"
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
var errInterruptedTask = mcpwire.Error{Code: mcpwire.CodeInternalError, Message: "interrupted_by_restart"}

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
	Error     *mcpwire.Error  `json:"error,omitempty"`
}

func (t *task) terminal() bool { return t.Status != taskWorking }

func (t *task) expired(now time.Time) bool { return t.TTL > 0 && now.After(t.Created.Add(t.TTL)) }

// taskStore keeps tasks in memory and, for the file store, journals every
// change with fsync before anyone can see it, so a task a client was told
// of survives a restart (SIGKILL included).
type taskStore struct {
	mu      sync.Mutex
	tasks   map[string]*task
	cancels map[string]chan struct{} // running tasks' cancellation
	f       *os.File                 // nil: memory
}

// openTaskStore opens the memory store (path "") or the file journal at
// path, replaying it: a task left working by the previous process fails
// with interrupted_by_restart.
func openTaskStore(path string) (*taskStore, error) {
	ts := &taskStore{tasks: map[string]*task{}, cancels: map[string]chan struct{}{}}
	if path == "" {
		return ts, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("task store: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), mcpwire.MaxEventBytes)
	for sc.Scan() {
		var t task
		if json.Unmarshal(sc.Bytes(), &t) != nil {
			continue // a torn last line: its write was never acknowledged
		}
		ts.tasks[t.ID] = &t
	}
	if err := sc.Err(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("task store: %w", err)
	}
	ts.f = f
	for _, t := range ts.tasks {
		if !t.terminal() {
			t.Status, t.Error, t.Updated = taskFailed, &errInterruptedTask, time.Now()
			if err := ts.write(t); err != nil {
				_ = f.Close()
				return nil, err
			}
		}
	}
	return ts, nil
}

// write journals t (the file store); the caller holds mu or owns ts.
func (ts *taskStore) write(t *task) error {
	if ts.f == nil {
		return nil
	}
	b, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("task store: %w", err)
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
	t.ID, t.Status = newTaskID(), taskWorking
	t.Created = time.Now()
	t.Updated = t.Created
	if err := ts.write(&t); err != nil {
		return nil, nil, err
	}
	cancel := make(chan struct{})
	ts.tasks[t.ID], ts.cancels[t.ID] = &t, cancel
	cp := t
	return &cp, cancel, nil
}

// finish records a task's terminal state.
func (ts *taskStore) finish(id, status string, result json.RawMessage, rpcErr *mcpwire.Error) error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
	delete(ts.cancels, id)
	if t == nil || t.terminal() {
		return nil
	}
	t.Status, t.Result, t.Error, t.Updated = status, result, rpcErr, time.Now()
	return ts.write(t)
}

// errTaskNotFound and errTaskExpired answer a task id the store does not
// (or no longer) hold.
var (
	errTaskNotFound = errors.New("task not found")
	errTaskExpired  = errors.New("task has expired")
)

// get returns a copy of the task, forgetting it once its TTL has passed.
func (ts *taskStore) get(id string) (task, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.tasks[id]
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
// task is known.
func (ts *taskStore) cancel(id string) error {
	if _, err := ts.get(id); err != nil {
		return err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if c, ok := ts.cancels[id]; ok {
		close(c)
		delete(ts.cancels, id)
	}
	return nil
}

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
	return ids
}

func (ts *taskStore) close() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.f == nil {
		return nil
	}
	err := ts.f.Close()
	ts.f = nil
	return err
}

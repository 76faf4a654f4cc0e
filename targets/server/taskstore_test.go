package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// sharedLog is a journal several task stores share, as replicas share a
// Redis stream; each store reads it through its own cursor.
type sharedLog struct {
	mu   sync.Mutex
	recs [][]byte
}

type sharedCursor struct {
	l    *sharedLog
	next int
	down atomic.Bool // Read fails, as a Redis out of reach would
}

func (l *sharedLog) open() *sharedCursor { return &sharedCursor{l: l} }

func (c *sharedCursor) Append(_ context.Context, rec []byte) error {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	c.l.recs = append(c.l.recs, append([]byte(nil), rec...))
	return nil
}

func (c *sharedCursor) Read(_ context.Context, block time.Duration, fn func([]byte) error) error {
	if c.down.Load() {
		time.Sleep(block)
		return errors.New("dial tcp 127.0.0.1:6379: connect: connection refused")
	}
	c.l.mu.Lock()
	recs := c.l.recs[c.next:]
	c.l.mu.Unlock()
	for _, r := range recs {
		c.next++
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func (c *sharedCursor) Close() error { return nil }

func TestSharedTaskStoreAnswersAPollOnAnotherReplica(t *testing.T) {
	j := &sharedLog{}
	one, err := openSharedTaskStore(j.open(), "server-1")
	require.NoError(t, err)
	two, err := openSharedTaskStore(j.open(), "server-2")
	require.NoError(t, err)
	mem, err := openTaskStore("")
	require.NoError(t, err)

	created, _, err := one.create(task{Client: "c1", RequestID: "2", Tool: "charge", OrderID: "o-1"})
	require.NoError(t, err)
	got, err := two.get(created.ID)
	require.NoError(t, err, "the other replica knows the task from the journal")
	assert.Equal(t, taskWorking, got.Status)
	assert.Equal(t, "server-1", got.Owner)
	_, err = mem.get(created.ID)
	assert.ErrorIs(t, err, errTaskNotFound, "a memory store knows only its own")

	require.NoError(t, one.finish(created.ID, taskCompleted, json.RawMessage(`{"content":[]}`), nil))
	got, err = two.get(created.ID)
	require.NoError(t, err)
	assert.Equal(t, taskCompleted, got.Status, "the poll elsewhere sees the result once it is written")
	assert.JSONEq(t, `{"content":[]}`, string(got.Result))
	_, err = two.cancel("no-such-task", false)
	assert.ErrorIs(t, err, errTaskNotFound)

	running, stop, err := one.create(task{Client: "c1", RequestID: "3", Tool: "charge"})
	require.NoError(t, err)
	_, err = two.cancel(running.ID, false)
	assert.ErrorIs(t, err, errTaskElsewhere, "only the replica running it can stop it")
	_, err = one.cancel(running.ID, false)
	require.NoError(t, err)
	select {
	case <-stop:
	default:
		t.Fatal("the running replica's cancel reaches the task")
	}
}

func TestTaskErrorCodes(t *testing.T) {
	assert.Equal(t, mcp.CodeInvalidParams, taskErrorCode(errTaskNotFound))
	assert.Equal(t, mcp.CodeInvalidParams, taskErrorCode(fmt.Errorf("x: %w", errTaskExpired)))
	assert.Equal(t, mcp.CodeInvalidParams, taskErrorCode(errTaskElsewhere))
	assert.Equal(t, mcp.CodeInternalError, taskErrorCode(errors.New("task store: read the shared journal: i/o timeout")),
		"a store out of reach is no news about the task")
}

func TestSharedTaskStoreFailsTheTasksOfARestartedReplicaOnly(t *testing.T) {
	j := &sharedLog{}
	one, err := openSharedTaskStore(j.open(), "server-1")
	require.NoError(t, err)
	two, err := openSharedTaskStore(j.open(), "server-2")
	require.NoError(t, err)
	mine, _, err := one.create(task{Client: "c1", RequestID: "2", Tool: "charge"})
	require.NoError(t, err)
	theirs, _, err := two.create(task{Client: "c2", RequestID: "2", Tool: "charge"})
	require.NoError(t, err)

	again, err := openSharedTaskStore(j.open(), "server-1") // server-1 crashed and started again
	require.NoError(t, err)
	got, err := again.get(mine.ID)
	require.NoError(t, err)
	assert.Equal(t, taskFailed, got.Status, "its own task died with the process")
	assert.Equal(t, errInterruptedTask.Message, got.Error.Message)
	got, err = again.get(theirs.ID)
	require.NoError(t, err)
	assert.Equal(t, taskWorking, got.Status, "another replica's task is still running there")
	got, err = two.get(mine.ID)
	require.NoError(t, err)
	assert.Equal(t, taskFailed, got.Status, "and every replica learns it")
}

func TestAnUnreadableSharedStoreIsNo404(t *testing.T) {
	j := (&sharedLog{}).open()
	ts := startServer(t, Config{EventStore: EventStoreRedis, RedisAddr: "unused", StoreOwner: "server-1", journal: j})
	unknown := headers("0123456789abcdef0123456789abcdef", mcp.Version20251125)
	j.down.Store(true)
	resp := ts.do(t, context.Background(), http.MethodPost, "", unknown, listTools)
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "whether the session exists is unknown: a transport fact, not a lost session")
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	j.down.Store(false)
	resp = ts.do(t, context.Background(), http.MethodPost, "", unknown, listTools)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "once the journal is read, an unknown session is a 404")
}

// TestReadTasksDamagedFiles reads the damaged journals every reader of
// chaosrun's JSON-lines files reads alike (internal/jsonl/jsonltest).
func TestReadTasksDamagedFiles(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		tasks, err := readTasks(strings.NewReader(tc.Input(`{"task_id":"t1","status":"completed"}`)))
		assert.NoError(t, tc.Check(len(tasks), err))
	}
}

// TestFileTaskStoreAfterATornWrite reopens a task journal that ends in a
// torn line, twice: the first reopening cuts the line off, so the task it
// then journals is not glued to it, and the second reopening still knows
// that task.
func TestFileTaskStoreAfterATornWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	ts, err := openTaskStore(path)
	require.NoError(t, err)
	first, _, err := ts.create(task{Client: "c1", RequestID: "2", Tool: "charge", OrderID: "o-1"})
	require.NoError(t, err)
	require.NoError(t, ts.finish(first.ID, taskCompleted, json.RawMessage(`{"content":[]}`), nil))
	require.NoError(t, ts.close())
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"task_id":"torn","sta`)
	require.NoError(t, err)
	require.NoError(t, f.Close())

	ts, err = openTaskStore(path)
	require.NoError(t, err)
	second, _, err := ts.create(task{Client: "c1", RequestID: "3", Tool: "charge", OrderID: "o-2"})
	require.NoError(t, err)
	require.NoError(t, ts.close())

	ts, err = openTaskStore(path)
	require.NoError(t, err)
	t.Cleanup(func() { _ = ts.close() })
	got, err := ts.get(first.ID)
	require.NoError(t, err)
	assert.Equal(t, taskCompleted, got.Status)
	got, err = ts.get(second.ID)
	require.NoError(t, err, "the task journalled after the torn line")
	assert.Equal(t, taskFailed, got.Status, "left working by a stopped process")
	_, err = ts.get("torn")
	assert.ErrorIs(t, err, errTaskNotFound)
}

package server

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

func fileConfig(t *testing.T) Config {
	return Config{EventStore: EventStoreFile, StorePath: filepath.Join(t.TempDir(), "events.jsonl"), Recorder: sideeffects.NewMemory()}
}

func (ts *tserver) withLedger(cfg Config) *tserver {
	ts.ledger = cfg.Recorder.(*sideeffects.Memory)
	return ts
}

func TestFileStoreSurvivesCrash(t *testing.T) {
	cfg := fileConfig(t)
	ts := startServer(t, cfg).withLedger(cfg)
	sid, v := ts.initialize(t, mcp.Version20251125)
	done := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 5})
	before := done.rest(t)
	s := ts.call(t, sid, v, 3, mcp.ToolCharge, map[string]any{"order_id": "o-9", "amount_cents": 100, "duration_ms": 10000})
	prime := s.next(t)
	require.NoError(t, ts.Close(), "an abrupt stop, as SIGKILL would leave it")

	ts2 := startServer(t, cfg).withLedger(cfg)
	resp := ts2.do(t, context.Background(), http.MethodPost, "", headers(sid, v), listTools)
	require.Equal(t, http.StatusOK, resp.StatusCode, "the session survived the restart")

	replay := ts2.resume(t, sid, v, eventID(t, before[0]))
	require.Equal(t, http.StatusOK, replay.StatusCode)
	assert.Equal(t, before[1:], primed(t, readAll(t, replay), eventID(t, before[0])), "a finished stream replays byte for byte")

	interrupted := ts2.resume(t, sid, v, eventID(t, prime))
	require.Equal(t, http.StatusOK, interrupted.StatusCode)
	res, sc := toolResult(t, resultOf(t, interrupted))
	assert.True(t, res.IsError)
	assert.Equal(t, map[string]any{"error": "interrupted_by_restart"}, sc)

	assert.Empty(t, ts2.records(sideeffects.KindCharge, nil), "the charge never ran to its end")
	finished := ts2.records(sideeffects.KindCallFinished, forRequest("3"))
	require.Len(t, finished, 1)
	assert.Equal(t, reasonInterrupted, finished[0].Reason)
	assert.Len(t, ts2.records(sideeffects.KindResultWritten, forRequest("3")), 1)
}

func TestFileStoreLosesNoAcknowledgedEvent(t *testing.T) {
	cfg := fileConfig(t)
	ts := startServer(t, cfg).withLedger(cfg)
	sid, v := ts.initialize(t, mcp.Version20250618)
	s := ts.call(t, sid, v, 2, mcp.ToolChatty, map[string]any{"events": 500, "interval_ms": 1})
	var seen []mcp.Event
	for range 50 {
		seen = append(seen, s.next(t))
	}
	require.NoError(t, ts.Close())

	ts2 := startServer(t, cfg).withLedger(cfg)
	replay := ts2.resume(t, sid, v, eventID(t, seen[0]))
	require.Equal(t, http.StatusOK, replay.StatusCode)
	got := readAll(t, replay)
	require.Greater(t, len(got), len(seen)-1)
	assert.Equal(t, seen[1:], got[:len(seen)-1], "every event a client received is still in the log")
	last := sortEvents(t, got[len(got)-1:])
	require.Len(t, last.responses, 1, "the interrupted call is resolved")
	res, _ := toolResult(t, last.responses[0])
	assert.True(t, res.IsError)
}

func TestIdempotencyKeySurvivesRestart(t *testing.T) {
	cfg := fileConfig(t)
	ts := startServer(t, cfg).withLedger(cfg)
	sid, v := ts.initialize(t, mcp.Version20251125)
	args := map[string]any{"order_id": "o-7", "amount_cents": 500, "idempotency_key": "k-1", "duration_ms": 1}
	_, sc := toolResult(t, resultOf(t, ts.call(t, sid, v, 2, mcp.ToolCharge, args).resp))
	assert.Nil(t, sc["deduplicated"])
	require.NoError(t, ts.Shutdown(context.Background()))

	ts2 := startServer(t, cfg).withLedger(cfg)
	sid2, v2 := ts2.initialize(t, mcp.Version20251125)
	_, sc = toolResult(t, resultOf(t, ts2.call(t, sid2, v2, 2, mcp.ToolCharge, args).resp))
	assert.Equal(t, true, sc["deduplicated"])
	assert.Equal(t, true, sc["charged"])
	assert.Len(t, ts2.records(sideeffects.KindCharge, nil), 1)
	dedup := ts2.records(sideeffects.KindChargeDeduplicated, nil)
	require.Len(t, dedup, 1)
	assert.Equal(t, "k-1", dedup[0].IdempotencyKey)
}

func TestShutdownDrainsTools(t *testing.T) {
	cfg := fileConfig(t)
	ts := startServer(t, cfg).withLedger(cfg)
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o-3", "amount_cents": 1, "duration_ms": 200})
	prime := s.next(t)
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	tail, _ := io.ReadAll(s.resp.Body)
	assert.Equal(t, "retry: 1000\n\n", string(tail), "with the file store the connection ends at once, with a retry hint: the result goes to the journal")
	require.NoError(t, <-shut)
	assert.Len(t, ts.records(sideeffects.KindCharge, nil), 1, "the running charge finished during the drain")
	assert.Empty(t, ts.records(sideeffects.KindSessionClosed, nil), "file-store sessions outlive the process")

	ts2 := startServer(t, cfg).withLedger(cfg)
	resp := ts2.resume(t, sid, v, eventID(t, prime))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	res, sc := toolResult(t, resultOf(t, resp))
	assert.False(t, res.IsError)
	assert.Equal(t, "o-3", sc["order_id"], "the drained result was in the log")
}

func TestShutdownDeadlineLeavesCallsUnresolved(t *testing.T) {
	cfg := fileConfig(t)
	ts := startServer(t, cfg).withLedger(cfg)
	sid, v := ts.initialize(t, mcp.Version20251125)
	s := ts.call(t, sid, v, 2, mcp.ToolCharge, map[string]any{"order_id": "o-4", "amount_cents": 1, "duration_ms": 10000})
	prime := s.next(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, ts.Shutdown(ctx), context.DeadlineExceeded)
	require.ErrorIs(t, ts.Shutdown(context.Background()), context.DeadlineExceeded, "idempotent: the first result")
	assert.Empty(t, ts.records(sideeffects.KindCharge, nil))

	ts2 := startServer(t, cfg).withLedger(cfg)
	res, sc := toolResult(t, resultOf(t, ts2.resume(t, sid, v, eventID(t, prime))))
	assert.True(t, res.IsError)
	assert.Equal(t, reasonInterrupted, sc["error"])
}

func TestMemoryStoreShutdownEndsSessions(t *testing.T) {
	ts := startServer(t, Config{})
	sid, _ := ts.initialize(t, mcp.Version20251125)
	require.NoError(t, ts.Shutdown(context.Background()))
	closed := ts.records(sideeffects.KindSessionClosed, nil)
	require.Len(t, closed, 1)
	assert.Equal(t, sid, closed[0].Session)
	assert.Equal(t, reasonShutdown, closed[0].Reason)
	require.NoError(t, ts.Close())
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"on_unresumable", Config{OnUnresumable: "x"}, `on_unresumable: must be gone or silent_head, got "x"`},
		{"event_store", Config{EventStore: "etcd"}, `event_store: must be memory, file or redis, got "etcd"`},
		{"redis", Config{EventStore: EventStoreRedis, RedisAddr: "127.0.0.1:1"}, `redis_addr, store_owner: required when event_store is redis`},
		{"redis unreachable", Config{EventStore: EventStoreRedis, RedisAddr: "127.0.0.1:1", StoreOwner: "server-1"}, `server: redis 127.0.0.1:1:`},
		{"store_path", Config{EventStore: EventStoreFile}, `store_path: required when event_store is file`},
		{"retention_events", Config{RetentionEvents: -1}, `retention_events: must not be negative, got -1`},
		{"retention_age", Config{RetentionAge: -time.Second}, `retention_age: must not be negative, got -1s`},
		{"session_ttl", Config{SessionTTL: -1}, `session_ttl: must not be negative`},
		{"keepalive", Config{Keepalive: -1}, `keepalive: must not be negative`},
		{"retry", Config{Retry: -1}, `retry: must not be negative`},
		{"default_charge_duration", Config{DefaultChargeDuration: -1}, `default_charge_duration: must not be negative`},
		{"allowed_origins", Config{AllowedOrigins: []string{""}}, `allowed_origins[0]: must not be empty`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := New(Config{EventStore: EventStoreFile, StorePath: filepath.Join(t.TempDir(), "no", "such", "dir", "j")})
	require.Error(t, err, "an unopenable store fails New")
}

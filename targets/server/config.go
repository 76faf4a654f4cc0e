package server

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
)

// Answers to an unhonourable Last-Event-ID (Config.OnUnresumable).
const (
	// OnUnresumableGone answers 410 with a machine-readable body naming the
	// stream's head, so the client can resume at head and surface the gap.
	OnUnresumableGone = "gone"
	// OnUnresumableSilentHead answers 200 and continues at the stream's head
	// without a word: the incident's bug, kept so experiments can reproduce
	// silent event loss.
	OnUnresumableSilentHead = "silent_head"
)

// Event stores (Config.EventStore).
const (
	EventStoreMemory = "memory"
	EventStoreFile   = "file"
	// EventStoreRedis shares one journal among replicas in a Redis stream
	// (store.Shared): a session opened on one replica is served by any.
	EventStoreRedis = "redis"
)

// DefaultRetry is Config.Retry when none is set: a client told to come back
// after a second does not hammer a restarting server.
const DefaultRetry = time.Second

// Config configures a [Server]. The zero value is a valid in-memory server
// with unbounded retention.
type Config struct {
	// RetentionEvents bounds each session's event log; 0 is unbounded.
	RetentionEvents int
	// RetentionAge evicts events older than this; 0 is no age limit.
	RetentionAge time.Duration
	// OnUnresumable is "gone" (default) or "silent_head".
	OnUnresumable string
	// EventStore is "memory" (default), "file" or "redis".
	EventStore string
	// StorePath is the journal of the file store; required for "file".
	StorePath string
	// RedisAddr is the Redis server (host:port) of the redis store, and
	// StoreOwner this replica's stable name in it; both required for
	// "redis".
	RedisAddr  string
	StoreOwner string
	// journal, when set, is the redis store's shared journal instead of
	// one dialled at RedisAddr: the tests' stand-in for Redis.
	journal store.Shared
	// SessionTTL expires a session idle this long; 0 never expires.
	SessionTTL time.Duration
	// Keepalive writes an SSE comment this often on every open SSE
	// connection; 0 is off.
	Keepalive time.Duration
	// Retry is the `retry:` field of priming events on 2025-11-25 streams,
	// and of the hint sent when the server ends a stream on shutdown; 0 is
	// DefaultRetry.
	Retry time.Duration
	// DefaultChargeDuration is how long charge runs when the call gives no
	// duration_ms.
	DefaultChargeDuration time.Duration
	// Tasks is "off" (default), "extension": at 2026-07-28 a tools/call
	// from a client declaring io.modelcontextprotocol/tasks is answered
	// with a task, polled by tasks/get; or "legacy": the experimental
	// tasks of 2025-11-25, declared in initialize on 2025-11-25 sessions,
	// a tools/call with params.task answered with a CreateTaskResult,
	// polled by tasks/get and fetched by tasks/result.
	Tasks string
	// TaskStore is "memory" (default), "file" (TaskStorePath, required) or
	// "redis" (RedisAddr and StoreOwner, required: a task journal the
	// replicas share, so a poll may land on any of them).
	TaskStore     string
	TaskStorePath string
	// TaskTTL is how long a task is kept from its creation (ttlMs); 0 is
	// DefaultTaskTTL. A 2025-11-25 client may ask for less (params.task.ttl),
	// never for more. TaskPollInterval is the pollIntervalMs suggested; 0
	// is DefaultTaskPollInterval.
	TaskTTL          time.Duration
	TaskPollInterval time.Duration
	// OnCancel is what a tool does when its request is cancelled while it
	// runs (at 2026-07-28, its response stream closing): one of
	// tools.OnCancelModes, "" is stop.
	OnCancel string
	// AllowedOrigins widens the Origin check: a request whose Origin header
	// is present answers 403 unless the origin is on a loopback host or is
	// listed here (scheme and host case-insensitive); "*" allows any.
	AllowedOrigins []string
	// Recorder receives tool side effects and server observations; nil is
	// a fresh sideeffects.NewMemory().
	Recorder sideeffects.Recorder
	// Source is Record.Source on every ledger record; default "reference".
	Source string
	// Clock times ledger records; the zero value starts a clock at New.
	Clock runclock.Clock
	// Logger receives debug and info logs; nil discards them.
	Logger *slog.Logger
}

// validate checks every field and fills defaults. Errors name the field as
// the experiment file spells it.
func (c *Config) validate() error {
	var errs []error
	nonNegative := func(field string, d time.Duration) {
		if d < 0 {
			errs = append(errs, fmt.Errorf("%s: must not be negative, got %s", field, d))
		}
	}
	// oneOf defaults *v to the first of allowed and refuses a value not
	// among them.
	oneOf := func(field string, v *string, allowed ...string) {
		switch {
		case *v == "":
			*v = allowed[0]
		case !slices.Contains(allowed, *v):
			last := len(allowed) - 1
			errs = append(errs, fmt.Errorf("%s: must be %s or %s, got %q", field, strings.Join(allowed[:last], ", "), allowed[last], *v))
		}
	}
	if c.RetentionEvents < 0 {
		errs = append(errs, fmt.Errorf("retention_events: must not be negative, got %d", c.RetentionEvents))
	}
	nonNegative("retention_age", c.RetentionAge)
	nonNegative("session_ttl", c.SessionTTL)
	nonNegative("keepalive", c.Keepalive)
	nonNegative("retry", c.Retry)
	nonNegative("default_charge_duration", c.DefaultChargeDuration)
	if c.Retry == 0 {
		c.Retry = DefaultRetry
	}
	oneOf("on_unresumable", &c.OnUnresumable, OnUnresumableGone, OnUnresumableSilentHead)
	oneOf("event_store", &c.EventStore, EventStoreMemory, EventStoreFile, EventStoreRedis)
	if c.EventStore == EventStoreFile && c.StorePath == "" {
		errs = append(errs, errors.New("store_path: required when event_store is file"))
	}
	if c.EventStore == EventStoreRedis && (c.RedisAddr == "" || c.StoreOwner == "") {
		errs = append(errs, errors.New("redis_addr, store_owner: required when event_store is redis"))
	}
	nonNegative("task_ttl", c.TaskTTL)
	nonNegative("task_poll_interval", c.TaskPollInterval)
	if c.TaskTTL == 0 {
		c.TaskTTL = DefaultTaskTTL
	}
	if c.TaskPollInterval == 0 {
		c.TaskPollInterval = DefaultTaskPollInterval
	}
	oneOf("tasks", &c.Tasks, TasksOff, TasksExtension, TasksLegacy)
	oneOf("task_store", &c.TaskStore, EventStoreMemory, EventStoreFile, EventStoreRedis)
	if c.TaskStore == EventStoreRedis && (c.RedisAddr == "" || c.StoreOwner == "") {
		errs = append(errs, errors.New("redis_addr, store_owner: required when task_store is redis"))
	}
	if c.TaskStore == EventStoreFile && c.TaskStorePath == "" {
		errs = append(errs, errors.New("task_store_path: required when task_store is file"))
	}
	switch {
	case c.OnCancel == "":
		c.OnCancel = tools.OnCancelStop
	case !slices.Contains(tools.OnCancelModes, c.OnCancel):
		errs = append(errs, fmt.Errorf("on_cancel: must be one of %s, got %q", strings.Join(tools.OnCancelModes, ", "), c.OnCancel))
	}
	for i, o := range c.AllowedOrigins {
		if o == "" {
			errs = append(errs, fmt.Errorf("allowed_origins[%d]: must not be empty", i))
		}
	}
	if c.Recorder == nil {
		c.Recorder = sideeffects.NewMemory()
	}
	if c.Source == "" {
		c.Source = "reference"
	}
	if c.Clock.Base().IsZero() {
		c.Clock = runclock.Start()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return errors.Join(errs...)
}

package server

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/internal/runclock"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/server/store"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire/mcp"
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

// Options are the reference server's settings as an experiment's server:
// block states them: the schema of the block for server.target reference,
// and what the server agent is handed at run scale. The tasks mode is the
// experiment's (server.tasks), not an option; see [Config] for what the
// agent adds (store files, the shared store, the ledger).
type Options struct {
	// RetentionEvents bounds each session's event log; 0 is unbounded.
	RetentionEvents int `yaml:"retention_events" json:"retention_events"`
	// RetentionAge evicts events older than this; 0 is no age limit.
	RetentionAge dur.Duration `yaml:"retention_age" json:"retention_age"`
	// OnUnresumable is the answer to an evicted Last-Event-ID: gone or
	// silent_head.
	OnUnresumable string `yaml:"on_unresumable" json:"on_unresumable"`
	// EventStore is memory, file or redis.
	EventStore string       `yaml:"event_store" json:"event_store"`
	SessionTTL dur.Duration `yaml:"session_ttl" json:"session_ttl"` // 0: never
	Keepalive  dur.Duration `yaml:"keepalive" json:"keepalive"`     // 0: none
	// Retry is the retry field of 2025-11-25 streams; 0 is DefaultRetry.
	Retry dur.Duration `yaml:"retry" json:"retry"`
	// OnCancel is one of tools.OnCancelModes.
	OnCancel  string `yaml:"on_cancel" json:"on_cancel"`
	TaskStore string `yaml:"task_store" json:"task_store"` // memory, file or redis
	// TaskTTL and TaskPollInterval: 0 is DefaultTaskTTL and
	// DefaultTaskPollInterval.
	TaskTTL          dur.Duration `yaml:"task_ttl" json:"task_ttl"`
	TaskPollInterval dur.Duration `yaml:"task_poll_interval" json:"task_poll_interval"`
}

// DefaultOptions returns the options an experiment gets for what it leaves
// out.
func DefaultOptions() *Options {
	return &Options{
		RetentionEvents: 1000, OnUnresumable: OnUnresumableGone, EventStore: EventStoreMemory,
		SessionTTL: dur.Duration(10 * time.Minute), OnCancel: tools.OnCancelStop, TaskStore: EventStoreMemory,
		TaskTTL: dur.Duration(DefaultTaskTTL), TaskPollInterval: dur.Duration(DefaultTaskPollInterval),
	}
}

// stores are the values of EventStore and TaskStore.
var stores = []string{EventStoreMemory, EventStoreFile, EventStoreRedis}

// Validate checks every setting.
func (o *Options) Validate() error {
	var errs []error
	oneOf := func(name, v string, allowed []string) {
		if !slices.Contains(allowed, v) {
			errs = append(errs, field.Errorf(name, "must be one of %s, got %q", strings.Join(allowed, ", "), v))
		}
	}
	oneOf("on_unresumable", o.OnUnresumable, []string{OnUnresumableGone, OnUnresumableSilentHead})
	oneOf("event_store", o.EventStore, stores)
	oneOf("on_cancel", o.OnCancel, tools.OnCancelModes)
	oneOf("task_store", o.TaskStore, stores)
	if o.RetentionEvents < 0 {
		errs = append(errs, field.Errorf("retention_events", "must be 0 (unbounded) or more, got %d", o.RetentionEvents))
	}
	return errors.Join(errs...)
}

// resolved gives the settings whose 0 stands for a default that default.
func (o Options) resolved() Options {
	def := func(d *dur.Duration, v time.Duration) {
		if *d == 0 {
			*d = dur.Duration(v)
		}
	}
	def(&o.Retry, DefaultRetry)
	def(&o.TaskTTL, DefaultTaskTTL)
	def(&o.TaskPollInterval, DefaultTaskPollInterval)
	return o
}

// Scaled returns the options at time scale f.
func (o *Options) Scaled(f float64) targets.Options {
	c := o.resolved()
	dur.ScaleAll(&c, f)
	return &c
}

// Needs lists the Redis server a store kept in it needs.
func (o *Options) Needs() []targets.Need {
	return []targets.Need{
		{What: targets.NeedRedis, Field: "event_store", Value: o.EventStore, Wanted: o.EventStore == EventStoreRedis},
		{What: targets.NeedRedis, Field: "task_store", Value: o.TaskStore, Wanted: o.TaskStore == EventStoreRedis},
	}
}

// Config returns a Config holding the options, for the caller to add the
// rest (the tasks mode, the stores' files, the recorder).
func (o *Options) Config() Config {
	return Config{
		RetentionEvents: o.RetentionEvents, RetentionAge: o.RetentionAge.D(), OnUnresumable: o.OnUnresumable,
		EventStore: o.EventStore, SessionTTL: o.SessionTTL.D(), Keepalive: o.Keepalive.D(), Retry: o.Retry.D(),
		OnCancel: o.OnCancel, TaskStore: o.TaskStore, TaskTTL: o.TaskTTL.D(), TaskPollInterval: o.TaskPollInterval.D(),
	}
}

// Descriptor is the reference server as a target: it speaks every
// revision, runs both task modes and answers every control action.
var Descriptor = targets.Server{
	Name:      targets.Reference,
	Options:   func() targets.Options { return DefaultOptions() },
	Protocols: append(slices.Clone(mcp.Versions), mcp.Version20260728),
	TaskModes: []string{TasksExtension, TasksLegacy},
	Tools:     []string{mcp.ToolCharge, mcp.ToolChatty},
	Controls:  []string{"expire", "terminate", "drop_tasks"},
}

package server

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/mcpwire"
	"github.com/chaosrun/chaosrun/targets/tools"
)

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
	Protocols: append(slices.Clone(mcpwire.Versions), mcpwire.Version20260728),
	TaskModes: []string{TasksExtension, TasksLegacy},
	Tools:     []string{mcpwire.ToolCharge, mcpwire.ToolChatty},
	Controls:  []string{"expire", "terminate", "drop_tasks"},
}

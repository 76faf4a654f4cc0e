package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chaosrun/chaosrun/targets/history"
)

// Cursor is what the resumable client knows about its progress: enough to
// pick up after a restart without invoking any call twice.
type Cursor struct {
	Client   string `json:"client"`
	Session  string `json:"session,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// NextRequestID is the JSON-RPC id the next request will carry, so that
	// a restarted client never reuses an id within its session.
	NextRequestID int64       `json:"next_request_id"`
	Done          []Completed `json:"done,omitempty"`
	InFlight      *InFlight   `json:"in_flight,omitempty"`
	// TaskTools are the tools the session's server runs as 2025-11-25
	// tasks, so that a restarted client adopting the session goes on
	// calling them as tasks.
	TaskTools []string `json:"task_tools,omitempty"`
}

// Completed is a call whose outcome is settled.
type Completed struct {
	Call    string       `json:"call"`
	Outcome history.Kind `json:"outcome"`
}

// InFlight is the call being made: the request that invoked it and the last
// event id persisted for its stream ("" until the first one arrives).
type InFlight struct {
	Call        string `json:"call"`
	RequestID   string `json:"request_id"`
	LastEventID string `json:"last_event_id,omitempty"`
	Attempt     int    `json:"attempt"`
	// TaskID is the task the server answered the call with (2026-07-28
	// tasks extension), persisted before it is polled so that a restarted
	// client polls it again instead of calling again.
	TaskID string `json:"task_id,omitempty"`
	// TaskSession is the session the call was made on (2025-11-25 tasks),
	// which the call's records keep naming when a poll has to open a new
	// one; TaskLegacy says the task is a 2025-11-25 one.
	TaskSession string `json:"task_session,omitempty"`
	TaskLegacy  bool   `json:"task_legacy,omitempty"`
}

// Completed reports the recorded outcome of a call, if it has one.
func (c *Cursor) Completed(call string) (history.Kind, bool) {
	for _, d := range c.Done {
		if d.Call == call {
			return d.Outcome, true
		}
	}
	return "", false
}

func (c *Cursor) clone() Cursor {
	out := *c
	out.Done = append([]Completed(nil), c.Done...)
	out.TaskTools = append([]string(nil), c.TaskTools...)
	if c.InFlight != nil {
		f := *c.InFlight
		out.InFlight = &f
	}
	return out
}

// Store keeps a client's cursor. Load returns a cursor with only Client set
// when nothing was saved; Save returns once the cursor is as durable as the
// store makes it.
type Store interface {
	Load() (Cursor, error)
	Save(Cursor) error
}

// MemoryStore is a cursor store that lives and dies with the process: a
// restarted client starts over.
type MemoryStore struct {
	client string
	cur    *Cursor
}

// NewMemoryStore returns an empty store for the given client.
func NewMemoryStore(client string) *MemoryStore { return &MemoryStore{client: client} }

// Load returns the last saved cursor.
func (m *MemoryStore) Load() (Cursor, error) {
	if m.cur == nil {
		return Cursor{Client: m.client}, nil
	}
	return m.cur.clone(), nil
}

// Save keeps a copy of c.
func (m *MemoryStore) Save(c Cursor) error {
	cp := c.clone()
	m.cur = &cp
	return nil
}

// FileStore is a cursor store in one JSON file. Save writes a temporary file,
// fsyncs it, renames it over the cursor and fsyncs the directory, so a crash
// leaves either the old cursor or the new one, never a torn one.
type FileStore struct {
	path, client string
}

// NewFileStore returns the store for client in dir: dir/<client>.json, with any
// character other than letters, digits, '.', '_' and '-' in the id replaced
// by '_'.
func NewFileStore(dir, client string) *FileStore {
	return &FileStore{path: filepath.Join(dir, safeName(client)+".json"), client: client}
}

// Path is the cursor file.
func (f *FileStore) Path() string { return f.path }

// Load reads the cursor file; a missing file is an empty cursor.
func (f *FileStore) Load() (Cursor, error) {
	b, err := os.ReadFile(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return Cursor{Client: f.client}, nil
	}
	if err != nil {
		return Cursor{}, fmt.Errorf("cursor: %w", err)
	}
	var c Cursor
	if err := json.Unmarshal(b, &c); err != nil {
		return Cursor{}, fmt.Errorf("cursor %s: %w", f.path, err)
	}
	if c.Client != f.client {
		return Cursor{}, fmt.Errorf("cursor %s: belongs to client %q, not %q", f.path, c.Client, f.client)
	}
	return c, nil
}

// Save replaces the cursor file durably.
func (f *FileStore) Save(c Cursor) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	dir := filepath.Dir(f.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(f.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if err := writeSync(tmp, b); err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.path); err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	return syncDir(dir)
}

func writeSync(f *os.File, b []byte) error {
	_, err := f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("cursor: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("cursor: sync %s: %w", dir, err)
	}
	return nil
}

func safeName(id string) string {
	if id == "" || id == "." || id == ".." {
		return "_" + id
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '_'
	}, id)
}

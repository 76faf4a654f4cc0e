package check

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/byo"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
)

// The files of one experiment's result folder that the checker reads.
const (
	HistoryFile = "history.jsonl"
	LedgerFile  = sideeffects.LedgerFile
	FaultsFile  = "faults.jsonl"
	// TimingsFile holds the run's timings as {"wall_ms": N, "scheduled_ms": M}.
	TimingsFile = "timings.json"
	// The agents' own files, which an interrupted run leaves in their state
	// folders instead of HistoryFile and LedgerFile (the ledger store's log
	// has the ledger export's format).
	StateHistoryFile = "state/client/history.jsonl"
	StateLedgerFile  = "state/ledger/ledger.log"
)

// Timings is the content of timings.json: what the runner measured and
// scheduled, in milliseconds.
type Timings struct {
	WallMS      int64 `json:"wall_ms"`
	ScheduledMS int64 `json:"scheduled_ms"`
}

// LoadRun reads an experiment's result folder into the input it was judged
// on: history.jsonl (required unless wire.jsonl is there: a client of the
// user's own writes none) and ledger.jsonl (required; where an interrupted
// run left them only in the agents' state folders, StateHistoryFile and
// StateLedgerFile), faults.jsonl (absent means no fault was injected),
// wire.jsonl (absent for a run recorded without the wire observer), the
// workload's ops from workload.json (absent: the built-in tools'
// [DefaultOps]) and the timings. Timings come from timings.json,
// else from the wall_ms and scheduled_ms figures of verdict.json, else are
// zero; a client of the user's own left its exit record in
// ClientExitFile. Judging the result gives the verdict.json the run wrote.
func LoadRun(dir string) (Input, error) {
	var in Input
	var err error
	in.Wire, err = wire.Load(filepath.Join(dir, wire.File))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	in.History, err = history.Load(present(dir, HistoryFile, StateHistoryFile))
	// A client of the user's own writes no history: the wire's client edge
	// is its account.
	if err != nil && !(errors.Is(err, fs.ErrNotExist) && len(in.Wire) > 0) {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	if in.Ledger, err = sideeffects.LoadLedger(present(dir, LedgerFile, StateLedgerFile)); err != nil {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	in.Faults, err = faults.LoadLog(filepath.Join(dir, FaultsFile))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	if in.Ops, err = loadOps(filepath.Join(dir, WorkloadFile)); err != nil {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	t, err := loadTimings(dir)
	if err != nil {
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	switch exit, err := byo.LoadExit(dir); {
	case err == nil:
		in.ClientExit = &exit
	case !errors.Is(err, fs.ErrNotExist):
		return Input{}, fmt.Errorf("load run: %w", err)
	}
	in.Wall = time.Duration(t.WallMS) * time.Millisecond
	in.Scheduled = time.Duration(t.ScheduledMS) * time.Millisecond
	return in, nil
}

// present is the path of name in dir, or of fallback when only it exists.
func present(dir, name, fallback string) string {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, fallback)); err == nil {
			return filepath.Join(dir, fallback)
		}
	}
	return path
}

func loadTimings(dir string) (Timings, error) {
	var t Timings
	b, err := os.ReadFile(filepath.Join(dir, TimingsFile))
	switch {
	case err == nil:
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&t); err != nil {
			return Timings{}, fmt.Errorf("%s: %w", TimingsFile, err)
		}
		return t, nil
	case !errors.Is(err, fs.ErrNotExist):
		return Timings{}, err
	}
	v, err := LoadVerdict(filepath.Join(dir, VerdictFile))
	switch {
	case err == nil:
		return Timings{WallMS: v.Figures.WallMS, ScheduledMS: v.Figures.ScheduledMS}, nil
	case errors.Is(err, fs.ErrNotExist):
		return Timings{}, nil
	}
	return Timings{}, err
}

// SaveRun writes in to dir as LoadRun reads it: history.jsonl, ledger.jsonl,
// faults.jsonl, timings.json, wire.jsonl when there is one, and the
// client's exit record when there is one. The runner writes the first three as the
// run goes; SaveRun is for runs assembled in memory, and for tests.
func SaveRun(dir string, in Input) error {
	if err := saveHistory(filepath.Join(dir, HistoryFile), in.History); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	if err := sideeffects.SaveLedger(filepath.Join(dir, LedgerFile), in.Ledger); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	if err := saveFaults(filepath.Join(dir, FaultsFile), in.Faults); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	if len(in.Wire) > 0 {
		if err := wire.Save(filepath.Join(dir, wire.File), in.Wire); err != nil {
			return fmt.Errorf("save run: %w", err)
		}
	}
	if err := SaveTimings(dir, in.Wall, in.Scheduled); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	if in.ClientExit != nil {
		if err := byo.SaveExit(dir, *in.ClientExit); err != nil {
			return fmt.Errorf("save run: %w", err)
		}
	}
	return nil
}

// SaveTimings writes timings.json into dir.
func SaveTimings(dir string, wall, scheduled time.Duration) error {
	b, err := json.Marshal(Timings{WallMS: wall.Milliseconds(), ScheduledMS: scheduled.Milliseconds()})
	if err != nil {
		return fmt.Errorf("timings: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, TimingsFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("timings: %w", err)
	}
	return nil
}

// saveHistory writes records verbatim (history.Writer would stamp a zero
// t_us with the current time).
func saveHistory(path string, recs []history.Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func saveFaults(path string, entries []faults.Entry) error {
	l, err := faults.CreateLog(path)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := l.Write(e); err != nil {
			l.Close()
			return err
		}
	}
	return l.Close()
}

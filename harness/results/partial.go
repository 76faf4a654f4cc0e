package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// PartialFile marks an experiment folder whose records are incomplete: the
// run was interrupted before the experiment's workload finished. Its one
// field, reason, says when and why.
const PartialFile = "partial.json"

type partialMark struct {
	Reason string `json:"reason"`
}

// SavePartial marks the experiment folder dir partial, for reason.
func SavePartial(dir string, reason string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return WriteJSON(filepath.Join(dir, PartialFile), partialMark{Reason: reason})
}

// LoadPartial returns the reason an experiment folder is partial, or "".
func LoadPartial(dir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, PartialFile))
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var m partialMark
	if err := json.Unmarshal(b, &m); err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Join(dir, PartialFile), err)
	}
	return m.Reason, nil
}

// MarkPartial makes a partial experiment's result unmet, saying why first.
func MarkPartial(res *ExperimentResult, reason string) {
	res.Partial, res.Met = reason, false
	res.Reasons = append([]string{"partial results: " + reason}, res.Reasons...)
}

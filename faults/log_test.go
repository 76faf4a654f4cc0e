package faults

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
)

// TestReadLogDamagedFiles reads the damaged files every reader of
// chaosrun's JSON-lines files reads alike (internal/jsonl/jsonltest): the
// fault log of a runner killed mid-write loads.
func TestReadLogDamagedFiles(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		entries, err := ReadLog(strings.NewReader(tc.Input(`{"index":0,"kind":"reset","target":"mcp","start_us":1,"end_us":2}`)))
		assert.NoError(t, tc.Check(len(entries), err), tc.Name)
	}
}

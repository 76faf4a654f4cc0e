package harness_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
)

// TestReadSamplesDamagedFiles reads the damaged files every reader of
// chaosrun's JSON-lines files reads alike (internal/jsonl/jsonltest).
func TestReadSamplesDamagedFiles(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		samples, err := harness.ReadSamples(strings.NewReader(tc.Input(`{"agent":"server","t_us":1,"incarnation":1,"rss_kib":2048,"fds":9,"procs":1}`)))
		assert.NoError(t, tc.Check(len(samples), err), tc.Name)
	}
}

func FuzzReadSamples(f *testing.F) {
	f.Add([]byte(`{"agent":"server","t_us":1,"incarnation":1,"rss_kib":2048,"fds":9,"procs":1}` + "\n"))
	f.Add([]byte("{\"agent\":\"server\"}\n{\"t_"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = harness.ReadSamples(strings.NewReader(string(b)))
	})
}

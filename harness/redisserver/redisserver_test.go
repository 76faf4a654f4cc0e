package redisserver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/server/store"
)

func TestStartKeepsItsDataInTheFolder(t *testing.T) {
	if _, err := Binary(); err != nil {
		if os.Getenv("CHAOSRUN_REQUIRE_BALANCERS") == "1" {
			t.Fatalf("CHAOSRUN_REQUIRE_BALANCERS=1: %v", err)
		}
		t.Skipf("skipped: %v", err)
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	p, err := Start(ctx, dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	j, err := store.DialRedis(ctx, p.Addr(), store.RedisKey)
	require.NoError(t, err)
	t.Cleanup(func() { _ = j.Close() })
	require.NoError(t, j.Append(ctx, []byte(`{"op":"key","key":"k"}`)))
	var got []string
	require.NoError(t, j.Read(ctx, 0, func(b []byte) error { got = append(got, string(b)); return nil }))
	assert.Equal(t, []string{`{"op":"key","key":"k"}`}, got)
	matches, _ := filepath.Glob(filepath.Join(dir, "appendonly*"))
	assert.NotEmpty(t, matches, "the append-only file is in the experiment's folder")
}

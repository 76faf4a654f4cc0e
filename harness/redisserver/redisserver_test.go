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

	// A crash (SIGKILL) loses nothing appended: every write was fsync'd.
	addr := p.Addr()
	require.NoError(t, p.Restart(ctx, false))
	assert.Equal(t, addr, p.Addr(), "restarted on its address")
	again, err := store.DialRedis(ctx, p.Addr(), store.RedisKey)
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Close() })
	got = nil
	require.NoError(t, again.Read(ctx, 0, func(b []byte) error { got = append(got, string(b)); return nil }))
	assert.Equal(t, []string{`{"op":"key","key":"k"}`}, got)

	require.NoError(t, p.Pause(ctx))
	require.NoError(t, p.Resume(ctx))
	require.NoError(t, again.Append(ctx, []byte(`{"op":"unkey","key":"k"}`)), "thawed, it serves again")
}

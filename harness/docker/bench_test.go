package docker

import (
	"context"
	"testing"
)

// BenchmarkStartToURL measures one serving agent from container creation to
// its printed URL, plus its removal by Close.
func BenchmarkStartToURL(b *testing.B) {
	needDocker(b)
	for b.Loop() {
		e := newEnv(b, Options{})
		e.start(server())
		if err := e.r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRestart measures a crash (SIGKILL) and a graceful restart
// (SIGTERM) of a serving agent, each until the new incarnation's URL.
func BenchmarkRestart(b *testing.B) {
	for _, tc := range []struct {
		name     string
		graceful bool
	}{{"crash", false}, {"graceful", true}} {
		b.Run(tc.name, func(b *testing.B) {
			p := newEnv(b, Options{}).start(server())
			for b.Loop() {
				if err := p.Restart(context.Background(), tc.graceful); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

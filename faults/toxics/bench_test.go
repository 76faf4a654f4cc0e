package toxics_test

import (
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/toxics"
)

// BenchmarkDownstreamThroughput measures bytes from a server through the
// proxy to a client with no toxic, with an idle timeout that never fires,
// and with an http_status pair installed that passes the connection.
func BenchmarkDownstreamThroughput(b *testing.B) {
	const chunk = 32 << 10
	type toxic struct {
		name, typ, stream string
		attrs             map[string]any
	}
	cases := []struct {
		name   string
		toxics []toxic
	}{
		{name: "no_toxic"},
		{name: "idle_timeout", toxics: []toxic{{"idle", toxics.TypeIdleTimeout, "downstream", map[string]any{"idle": 60000}}}},
		{name: "http_status_passing", toxics: []toxic{
			{"answer", toxics.TypeHTTPStatus, "downstream", map[string]any{"status": 503}},
			{"gate", toxics.TypeHTTPStatusGate, "upstream", map[string]any{"count": 1}},
		}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			upstream := serveTCP(b, func(c net.Conn) {
				buf := make([]byte, chunk)
				for {
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			})
			p := startProxy(b, upstream)
			for _, x := range tc.toxics {
				addToxic(b, p, x.name, x.typ, x.stream, 1, x.attrs)
			}
			conn, err := net.Dial("tcp", p.Listen)
			require.NoError(b, err)
			b.Cleanup(func() { conn.Close() })
			buf := make([]byte, chunk)
			b.SetBytes(chunk)
			b.ResetTimer()
			for range b.N {
				if _, err := io.ReadFull(conn, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

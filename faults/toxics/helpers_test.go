package toxics_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults/toxics"
)

// startProxy runs an in-process Toxiproxy proxy on 127.0.0.1:0 in front of
// upstream, with chaosrun's toxics registered.
func startProxy(t testing.TB, upstream string) *toxiproxy.Proxy {
	t.Helper()
	toxics.Register()
	server := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	p := toxiproxy.NewProxy(server, "test", "127.0.0.1:0", upstream)
	require.NoError(t, server.Collection.Add(p, true))
	t.Cleanup(func() { _ = server.Collection.Clear() })
	return p
}

// addToxic installs a toxic through the same JSON the REST API takes.
func addToxic(t testing.TB, p *toxiproxy.Proxy, name, typ, stream string, toxicity float32, attrs map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"name": name, "type": typ, "stream": stream, "toxicity": toxicity, "attributes": attrs,
	})
	require.NoError(t, err)
	_, err = p.Toxics.AddToxicJson(strings.NewReader(string(body)))
	require.NoError(t, err)
}

func removeToxic(t testing.TB, p *toxiproxy.Proxy, name string) {
	t.Helper()
	require.NoError(t, p.Toxics.RemoveToxic(context.Background(), name))
}

// serveTCP runs handle for every connection to a loopback listener and
// returns its address. Cleanup closes the listener and every connection
// and waits for the handlers.
func serveTCP(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

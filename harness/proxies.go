package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/proxy"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/wire"
)

// proxyName is the agent name of proxy agent k (1-based) of n: "proxy" for
// the only one, so a run with one keeps its folders as ever, and "proxy-k"
// among several, which each carry a share of the clients.
func proxyName(k, n int) string {
	if n <= 1 {
		return agent.RoleProxy
	}
	return faults.AgentName(agent.RoleProxy, k)
}

// proxyNames names the experiment's proxy agents, in order.
func (e *experiment) proxyNames() []string {
	n := max(e.proxies, 1)
	names := make([]string, n)
	for k := range names {
		names[k] = proxyName(k+1, n)
	}
	return names
}

// startProxies starts the experiment's proxy agents, each with its taps and
// its Toxiproxy proxy in front of upstream, and keeps the endpoint through
// each for the client. Among several, agent k numbers its wire records and
// connections as share k (wire.Share), so that their files merge into one
// wire.jsonl (collectWire).
func (e *experiment) startProxies(ctx context.Context, upstream string) error {
	n := max(e.proxies, 1)
	if n > 1 {
		e.progress("spreading %d clients over %d proxy agents (open-file limit)", e.plan.Template.Clients, n)
	}
	for k, name := range e.proxyNames() {
		spec := agent.Spec{Role: agent.RoleProxy, Port: 8474, PeerPorts: []int{proxyPort}}
		if n > 1 {
			spec.Args = []string{"--share", strconv.Itoa(k + 1), "--shares", strconv.Itoa(n)}
		}
		p, err := e.startAs(ctx, name, spec)
		if err != nil {
			return err
		}
		c := proxy.NewClient(p.URL())
		e.observer = append(e.observer, c)
		endpoint, err := observe(ctx, upstream, p, c)
		if err != nil {
			return err
		}
		e.endpoints = append(e.endpoints, endpoint)
	}
	return nil
}

// toxiproxies is the Toxiproxy API of every proxy agent, which a proxy
// fault acts on together.
func (e *experiment) toxiproxies() []*toxiclient.Client {
	var cs []*toxiclient.Client
	for _, name := range e.proxyNames() {
		cs = append(cs, toxiclient.NewClient(e.procs.of(name).URL()))
	}
	return cs
}

// collectWire moves the wire.jsonl of the stopped proxy agents into the
// result folder: the only agent's as it is, several agents' merged into
// one in the order of their times (wire.Merge), their numbers kept.
func (e *experiment) collectWire(ctx context.Context) error {
	names := e.proxyNames()
	if len(names) == 1 {
		return e.moveOut(ctx, names[0], wire.File)
	}
	var parts []string
	defer func() {
		for _, p := range parts {
			_ = os.Remove(p)
		}
	}()
	for _, name := range names {
		part := name + "." + wire.File
		if err := e.moveOutAs(ctx, name, wire.File, part); err != nil {
			return err
		}
		parts = append(parts, filepath.Join(e.dir, part))
	}
	return mergeWire(filepath.Join(e.dir, wire.File), parts)
}

func mergeWire(dst string, parts []string) error {
	var srcs []*os.File
	defer func() {
		for _, f := range srcs {
			f.Close()
		}
	}()
	for _, p := range parts {
		f, err := os.Open(p)
		if err != nil {
			return fmt.Errorf("merge wire: %w", err)
		}
		srcs = append(srcs, f)
	}
	out, err := os.Create(dst)
	if err != nil {
		return fmt.Errorf("merge wire: %w", err)
	}
	readers := make([]io.Reader, len(srcs))
	for i, f := range srcs {
		readers[i] = f
	}
	return errors.Join(wire.Merge(out, readers...), out.Close())
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/wire"
)

// proxies fetches the run's proxy from every proxy agent's Toxiproxy API.
// A fresh handle per operation keeps concurrent injections from sharing a
// mutable one.
func (r *run) proxies() ([]*toxiclient.Proxy, error) {
	if len(r.env.Toxiproxies) == 0 || r.env.Proxy == "" {
		return nil, errors.New("no Toxiproxy proxy in this run")
	}
	ps := make([]*toxiclient.Proxy, 0, len(r.env.Toxiproxies))
	for _, c := range r.env.Toxiproxies {
		p, err := c.Proxy(r.env.Proxy)
		if err != nil {
			return nil, fmt.Errorf("proxy %s: %w", r.env.Proxy, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// eachProxy applies op to the run's proxy in every proxy agent, stopping
// at the first that fails.
func (r *run) eachProxy(op func(*toxiclient.Proxy) error) error {
	ps, err := r.proxies()
	if err != nil {
		return err
	}
	for _, p := range ps {
		if err := op(p); err != nil {
			return err
		}
	}
	return nil
}

func (r *run) addToxic(name, typ, stream string, toxicity float32, attrs toxiclient.Attributes) error {
	return r.eachProxy(func(p *toxiclient.Proxy) error {
		_, err := p.AddToxic(name, typ, stream, toxicity, attrs)
		return err
	})
}

func (r *run) removeToxic(name string) error {
	return r.eachProxy(func(p *toxiclient.Proxy) error {
		if err := p.RemoveToxic(name); err != nil {
			return fmt.Errorf("remove toxic %s: %w", name, err)
		}
		return nil
	})
}

// toxic installs one toxic for an injection, named after the kind, the
// fault's index and the repetition (plus suffix), and returns its removal.
func (r *run) toxic(in Injection, suffix, typ, stream string, attrs toxiclient.Attributes) (heal, string, error) {
	name := fmt.Sprintf("%s-%d-%d%s", in.Kind, in.Index, in.Repeat, suffix)
	if err := r.addToxic(name, typ, stream, 1, attrs); err != nil {
		return nil, "", err
	}
	h := func(context.Context) error { return r.removeToxic(name) }
	return h, fmt.Sprintf("toxic %s (%s %s%s)", name, typ, stream, formatAttrs(attrs)), nil
}

// addLinger installs the zero-toxicity reset_peer that gives connections
// opened from now on SO_LINGER 0 (see package faults/toxics). One left by
// an earlier run on the same proxy is reused.
func (r *run) addLinger() error {
	err := r.eachProxy(func(p *toxiclient.Proxy) error {
		_, err := p.AddToxic(lingerToxic, toxics.ResetPeer, Downstream, 0, toxiclient.Attributes{"timeout": 0})
		var apiErr *toxiclient.ApiError
		if errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("install %s: %w", lingerToxic, err)
	}
	r.linger = true
	return nil
}

// refuse disables the proxy for a refuse partition.
func (r *run) refuse(ctx context.Context) (heal, string, error) {
	enable := func(on bool) func(context.Context) error {
		return func(ctx context.Context) error {
			if on {
				if err := r.eachProxy((*toxiclient.Proxy).Enable); err != nil {
					return err
				}
				if r.env.Edges != nil {
					return r.env.Edges.Accept(ctx, wire.EdgeClient)
				}
				return nil
			}
			// With the wire observer in front of the proxy, the client
			// connects to its tap: the tap must refuse too, or a new
			// connection would be accepted there and then reset.
			if r.env.Edges != nil {
				if err := r.env.Edges.Refuse(ctx, wire.EdgeClient); err != nil {
					return err
				}
			}
			return r.eachProxy((*toxiclient.Proxy).Disable)
		}
	}
	return r.shared(ctx, "refuse", enable(false), enable(true),
		fmt.Sprintf("proxy %s disabled: its connections closed, new ones refused", r.env.Proxy))
}

package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// proxy fetches the run's proxy from the Toxiproxy API. A fresh handle per
// operation keeps concurrent injections from sharing a mutable one.
func (r *run) proxy() (*toxiclient.Proxy, error) {
	if r.env.Toxiproxy == nil || r.env.Proxy == "" {
		return nil, errors.New("no Toxiproxy proxy in this run")
	}
	p, err := r.env.Toxiproxy.Proxy(r.env.Proxy)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", r.env.Proxy, err)
	}
	return p, nil
}

func (r *run) addToxic(name, typ, stream string, toxicity float32, attrs toxiclient.Attributes) error {
	p, err := r.proxy()
	if err != nil {
		return err
	}
	_, err = p.AddToxic(name, typ, stream, toxicity, attrs)
	return err
}

func (r *run) removeToxic(name string) error {
	p, err := r.proxy()
	if err != nil {
		return err
	}
	if err := p.RemoveToxic(name); err != nil {
		return fmt.Errorf("remove toxic %s: %w", name, err)
	}
	return nil
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
	err := r.addToxic(lingerToxic, toxics.ResetPeer, Downstream, 0, toxiclient.Attributes{"timeout": 0})
	var apiErr *toxiclient.ApiError
	if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == http.StatusConflict) {
		return fmt.Errorf("install %s: %w", lingerToxic, err)
	}
	r.linger = true
	return nil
}

// refuse disables the proxy for a refuse partition.
func (r *run) refuse(ctx context.Context) (heal, string, error) {
	enable := func(on bool) func(context.Context) error {
		return func(ctx context.Context) error {
			p, err := r.proxy()
			if err != nil {
				return err
			}
			if on {
				if err := p.Enable(); err != nil {
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
			return p.Disable()
		}
	}
	return r.shared(ctx, "refuse", enable(false), enable(true),
		fmt.Sprintf("proxy %s disabled: its connections closed, new ones refused", r.env.Proxy))
}

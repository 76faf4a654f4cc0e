package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/wire"
)

// Client is the runner's side of the proxy agent's own API. It arms
// protocol triggers, follows their firings over one long-lived stream from
// the moment it first arms, and reports heals; it implements
// faults.Triggers. It is safe for concurrent use; Close stops following.
type Client struct {
	base string
	hc   *http.Client // for the short calls

	mu        sync.Mutex
	following bool
	fired     map[string]trigger.Firing
	changed   chan struct{} // closed and replaced when fired or ended changes
	ended     error         // why the stream ended, once it has
	stop      context.CancelFunc
	stopped   chan struct{}
}

// NewClient returns a client of the proxy agent at baseURL.
func NewClient(baseURL string) *Client {
	return &Client{
		base: strings.TrimRight(baseURL, "/"), hc: &http.Client{Timeout: 10 * time.Second},
		fired: map[string]trigger.Firing{}, changed: make(chan struct{}),
	}
}

// Arm arms triggers on the agent and starts following firings.
func (c *Client) Arm(ctx context.Context, ts []trigger.Trigger) error {
	if err := c.follow(); err != nil {
		return err
	}
	return c.post(ctx, pathTriggers, armRequest{Triggers: ts})
}

// Observe has the agent observe its Toxiproxy proxy named proxy (created
// through Toxiproxy's API, its upstream the server): the agent accepts the
// proxy's clients on listen itself, dials the upstream for each and hands
// both sockets to the proxy's toxics, recording what crosses each edge. It
// returns the address it listens on, the one clients connect to.
func (c *Client) Observe(ctx context.Context, proxy, listen string) (string, error) {
	var a observeAnswer
	if err := c.call(ctx, pathObserve, observeRequest{Proxy: proxy, Listen: listen}, &a); err != nil {
		return "", err
	}
	return a.Listen, nil
}

// Refuse has an edge (the client edge: the server edge has no listener)
// refuse new connections; Accept undoes it.
func (c *Client) Refuse(ctx context.Context, edge wire.Edge) error {
	return c.post(ctx, strings.Replace(pathRefuse, "{edge}", string(edge), 1), struct{}{})
}

// Accept has an edge listen again on the same address.
func (c *Client) Accept(ctx context.Context, edge wire.Edge) error {
	return c.post(ctx, strings.Replace(pathAccept, "{edge}", string(edge), 1), struct{}{})
}

// Reset resets every connection through the observed proxy now, and
// returns how many it reset and the window it acted in, on the run's clock.
func (c *Client) Reset(ctx context.Context) (conns int, fromUS, toUS int64, err error) {
	var a resetsAnswer
	err = c.call(ctx, pathReset, struct{}{}, &a)
	return a.Conns, a.FromUS, a.ToUS, err
}

// StartResets has the agent reset, until StopResets(id), every connection
// after the later of now and its opening, and returns when it began.
func (c *Client) StartResets(ctx context.Context, id string, after time.Duration) (fromUS int64, err error) {
	var a resetsAnswer
	err = c.call(ctx, pathResets, resetsRequest{ID: id, AfterUS: after.Microseconds()}, &a)
	return a.FromUS, err
}

// StopResets stops the resets id, and returns how many connections they
// reset and when they stopped.
func (c *Client) StopResets(ctx context.Context, id string) (conns int, toUS int64, err error) {
	var a resetsAnswer
	err = c.call(ctx, strings.Replace(pathResetsStop, "{id}", url.PathEscape(id), 1), struct{}{}, &a)
	return a.Conns, a.ToUS, err
}

// Healed tells the agent that fault index healed at atUS.
func (c *Client) Healed(ctx context.Context, index int, atUS int64) error {
	return c.post(ctx, pathHeals, healRequest{Index: index, AtUS: atUS})
}

// Fired waits until the trigger id has fired, or ctx ends, or the stream of
// firings ended without it.
func (c *Client) Fired(ctx context.Context, id string) (trigger.Firing, error) {
	for {
		c.mu.Lock()
		f, ok := c.fired[id]
		ended, changed := c.ended, c.changed
		c.mu.Unlock()
		switch {
		case ok:
			return f, nil
		case ended != nil:
			return trigger.Firing{}, ended
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return trigger.Firing{}, ctx.Err()
		}
	}
}

// Close stops following firings and waits for the stream to end. It is
// idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	stop, stopped := c.stop, c.stopped
	c.mu.Unlock()
	if stop != nil {
		stop()
		<-stopped
	}
	return nil
}

// follow opens the firings stream once; it is read until Close or the
// agent stops.
func (c *Client) follow() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.following {
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+pathFirings, nil)
	if err != nil {
		stop()
		return fmt.Errorf("proxy agent: follow firings: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		stop()
		return fmt.Errorf("proxy agent: follow firings: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		stop()
		return fmt.Errorf("proxy agent: follow firings: %s", resp.Status)
	}
	c.following, c.stop, c.stopped = true, stop, make(chan struct{})
	go c.read(resp.Body)
	return nil
}

func (c *Client) read(body io.ReadCloser) {
	defer close(c.stopped)
	defer body.Close()
	dec := json.NewDecoder(body)
	for {
		f, err := decodeFiring(dec)
		c.mu.Lock()
		if err != nil {
			c.ended = err
		} else {
			c.fired[f.ID] = f
		}
		close(c.changed)
		c.changed = make(chan struct{})
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (c *Client) post(ctx context.Context, path string, body any) error {
	return c.call(ctx, path, body, nil)
}

// call POSTs body to path and decodes the answer into out, when given.
func (c *Client) call(ctx context.Context, path string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("proxy agent %s: %w", path, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("proxy agent %s: %w", path, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("proxy agent %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("proxy agent %s: %s: %s", path, resp.Status, bytes.TrimSpace(msg))
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return fmt.Errorf("proxy agent %s: %w", path, err)
		}
	}
	return nil
}

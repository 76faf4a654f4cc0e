package sideeffects

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// ErrRejected marks a record the ledger service refused (an answer 4xx):
// sending it again cannot succeed, so the client does not retry.
var ErrRejected = errors.New("ledger rejected the request")

// Client writes records to a ledger service over HTTP. It implements
// [Recorder] and is safe for concurrent use.
type Client struct {
	base     string
	hc       *http.Client
	attempts int
	initial  time.Duration
	max      time.Duration
}

// ClientOption configures a [Client].
type ClientOption func(*Client)

// WithHTTPClient sends requests through hc instead of the client's own.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *Client) { c.hc = hc }
}

// WithRetry bounds retries of a failed send: at most attempts sends in all,
// waiting initial before the second and doubling up to max, with jitter.
func WithRetry(attempts int, initial, max time.Duration) ClientOption {
	return func(c *Client) { c.attempts, c.initial, c.max = attempts, initial, max }
}

// NewClient returns a client of the ledger service at baseURL (such as
// "http://127.0.0.1:4321"). By default it makes up to 8 attempts, backing off
// from 20ms to 1s, each attempt bounded by 10s.
func NewClient(baseURL string, opts ...ClientOption) *Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64 // many tools record at once; keep their connections
	c := &Client{
		base:     strings.TrimRight(baseURL, "/"),
		hc:       &http.Client{Transport: tr, Timeout: 10 * time.Second},
		attempts: 8,
		initial:  20 * time.Millisecond,
		max:      time.Second,
	}
	for _, o := range opts {
		o(c)
	}
	c.attempts = max(c.attempts, 1)
	return c
}

// Record stores r and returns once the ledger has it durably. An empty ID is
// filled with [NewID] before the first send; every retry sends the same id,
// so the ledger stores the record once however often it is sent. Transport
// failures and 5xx answers are retried; a 4xx answer returns [ErrRejected]
// with the ledger's reason.
func (c *Client) Record(ctx context.Context, r Record) error {
	_, err := c.RecordAll(ctx, []Record{r})
	return err
}

// RecordAll stores recs as one batch (all or none is accepted) and returns each
// record's N, in order. Empty ids are filled before the first send.
func (c *Client) RecordAll(ctx context.Context, recs []Record) ([]int64, error) {
	recs = append([]Record(nil), recs...)
	for i := range recs {
		if recs[i].ID == "" {
			recs[i].ID = NewID()
		}
	}
	body, err := json.Marshal(recs)
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	var resp postResponse
	if err := c.retry(ctx, func() error { return c.post(ctx, body, &resp) }); err != nil {
		return nil, err
	}
	if len(resp.Stored) != len(recs) {
		return nil, fmt.Errorf("ledger client: %d records acknowledged, %d sent", len(resp.Stored), len(recs))
	}
	ns := make([]int64, len(recs))
	for i, s := range resp.Stored {
		ns[i] = s.N
	}
	return ns, nil
}

// Records fetches the ledger's export.
func (c *Client) Records(ctx context.Context) ([]Record, error) {
	var recs []Record
	err := c.retry(ctx, func() error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+"/records", nil)
		if err != nil {
			return permanent{err}
		}
		res, err := c.hc.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if err := statusError(res); err != nil {
			return err
		}
		recs, err = ReadLedger(res.Body)
		return err
	})
	return recs, err
}

func (c *Client) post(ctx context.Context, body []byte, out *postResponse) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+"/records", bytes.NewReader(body))
	if err != nil {
		return permanent{err}
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := statusError(res); err != nil {
		return err
	}
	return json.NewDecoder(res.Body).Decode(out)
}

// statusError turns a non-200 answer into an error: permanent for 4xx,
// retryable otherwise.
func statusError(res *http.Response) error {
	if res.StatusCode == http.StatusOK {
		return nil
	}
	var e errorResponse
	b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if json.Unmarshal(b, &e) != nil || e.Error == "" {
		e.Error = strings.TrimSpace(string(b))
	}
	err := fmt.Errorf("ledger answered %d: %s", res.StatusCode, e.Error)
	if res.StatusCode >= 400 && res.StatusCode < 500 {
		return permanent{fmt.Errorf("%w: %w", ErrRejected, err)}
	}
	return err
}

// permanent wraps an error that retrying cannot cure.
type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }

// retry runs op until it succeeds, fails permanently, the attempts run out
// or ctx is done.
func (c *Client) retry(ctx context.Context, op func() error) error {
	delay := c.initial
	var err error
	for attempt := 1; ; attempt++ {
		err = op()
		var p permanent
		switch {
		case err == nil:
			return nil
		case errors.As(err, &p):
			return fmt.Errorf("ledger client: %w", p.err)
		case attempt >= c.attempts:
			return fmt.Errorf("ledger client: %d attempts: %w", attempt, err)
		}
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("ledger client: %w (last error: %w)", ctx.Err(), err)
		case <-t.C:
		}
		delay = min(2*delay, c.max)
	}
}

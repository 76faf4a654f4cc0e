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
	batch    batcher
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

// WithBatch tunes the group commit (see [Client.Record]): at most records
// records in one request, and at most linger spent waiting for a batch to
// fill. The defaults are 1,000 records and 500µs. WithBatch(1, 0) sends
// every record alone.
func WithBatch(records int, linger time.Duration) ClientOption {
	return func(c *Client) { c.batch.records, c.batch.linger = records, linger }
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
		batch:    newBatcher(defaultBatchRecords, defaultBatchBytes, defaultLinger, 1),
	}
	for _, o := range opts {
		o(c)
	}
	c.attempts = max(c.attempts, 1)
	c.batch.records = min(max(c.batch.records, 1), MaxBatch)
	c.batch.linger = max(c.batch.linger, 0)
	return c
}

// Record stores r and returns once the ledger has it durably. An empty ID is
// filled with [NewID] before the first send; every retry sends the same id,
// so the ledger stores the record once however often it is sent. Transport
// failures and 5xx answers are retried; a record that fails
// [Record.Validate] is not sent, and it and a 4xx answer return
// [ErrRejected] with the reason.
//
// Concurrent calls share requests (group commit): a call's record waits
// for the request in flight, if there is one, and at most the linger of
// [WithBatch] for others to join it; it is then sent with every record
// queued meanwhile, and the call returns once the service has acknowledged
// that request, which it does only after an fsync covering all of it. If
// ctx ends first, Record returns ctx's error and the record may or may not
// be stored, as with any request abandoned in flight.
func (c *Client) Record(ctx context.Context, r Record) error {
	_, err := c.RecordAll(ctx, []Record{r})
	return err
}

// RecordAll stores recs as one batch (all or none is accepted) and returns each
// record's N, in order. Empty ids are filled before the first send. The
// records travel in one request, possibly with other callers' records.
func (c *Client) RecordAll(ctx context.Context, recs []Record) ([]int64, error) {
	recs = append([]Record(nil), recs...)
	for i := range recs {
		if recs[i].ID == "" {
			recs[i].ID = NewID()
		}
		if err := recs[i].Validate(); err != nil {
			if len(recs) > 1 {
				err = fmt.Errorf("record %d: %w", i, err)
			}
			return nil, fmt.Errorf("ledger client: %w: %w", ErrRejected, err)
		}
	}
	if len(recs) == 0 {
		return nil, fmt.Errorf("ledger client: %w: no records", ErrRejected)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	g, err := newGroup(ctx, recs)
	if err != nil {
		return nil, fmt.Errorf("ledger client: %w", err)
	}
	c.batch.submit(g, c.sendBatch)
	select {
	case <-g.done:
		return g.ns, g.err
	case <-ctx.Done():
		return nil, fmt.Errorf("ledger client: %w", ctx.Err())
	}
}

// Records fetches the ledger's export.
func (c *Client) Records(ctx context.Context) ([]Record, error) {
	var recs []Record
	err := c.retry(ctx, func() error {
		return c.do(ctx, http.MethodGet, nil, func(body io.Reader) (err error) {
			recs, err = ReadLedger(body)
			return err
		})
	})
	return recs, err
}

func (c *Client) post(ctx context.Context, body []byte, out *postResponse) error {
	return c.do(ctx, http.MethodPost, body, func(body io.Reader) error {
		if err := json.NewDecoder(body).Decode(out); err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, body) // read to EOF, so the connection is kept
		return nil
	})
}

// do sends one request to /records, with body as JSON (nil: none), and
// hands the answer's body to read when the ledger answered 200.
func (c *Client) do(ctx context.Context, method string, body []byte, read func(io.Reader) error) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+"/records", rd)
	if err != nil {
		return permanent{err}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if err := statusError(res); err != nil {
		return err
	}
	return read(res.Body)
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

// isRejected reports whether err is a 4xx answer.
func isRejected(err error) bool { return errors.Is(err, ErrRejected) }

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

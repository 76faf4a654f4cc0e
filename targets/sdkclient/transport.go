package sdkclient

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// maxPeekBytes bounds how much of a POST body, or of a JSON answer, the
// observer reads. A larger one is passed on untouched and unobserved.
const maxPeekBytes = 4 << 20

// observer is the http.RoundTripper a [Tracker] puts under an SDK client.
// It never changes a request or a response: it reads request bodies
// through GetBody and the response bytes as the SDK reads them.
type observer struct {
	t    *Tracker
	base http.RoundTripper
}

func (o *observer) RoundTrip(req *http.Request) (*http.Response, error) {
	c := callFrom(req.Context())
	switch {
	case c != nil && req.Method == http.MethodPost:
		if id, ok := o.toolsCall(req); ok {
			return o.post(req, c, id)
		}
	case c != nil && req.Method == http.MethodGet && req.Header.Get(mcp.HeaderLastEventID) != "":
		return o.resume(req, c)
	}
	resp, err := o.base.RoundTrip(req)
	if err == nil {
		o.t.tap(req.Context(), nil, resp)
	}
	return resp, err
}

// toolsCall reports whether req posts a tools/call, and its request id.
func (o *observer) toolsCall(req *http.Request) (string, bool) {
	if req.GetBody == nil {
		return "", false
	}
	body, err := req.GetBody()
	if err != nil {
		return "", false
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, maxPeekBytes+1))
	if err != nil || len(b) > maxPeekBytes {
		return "", false
	}
	id := mcp.CallID(b)
	return id, id != ""
}

func (o *observer) post(req *http.Request, c *Call, requestID string) (*http.Response, error) {
	c.sending(requestID)
	trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
		if info.Err == nil {
			c.markWrote()
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	resp, err := o.base.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	c.posted(status, err)
	if err == nil {
		o.t.tap(req.Context(), c, resp)
	}
	return resp, err
}

func (o *observer) resume(req *http.Request, c *Call) (*http.Response, error) {
	attempt, last, delay := c.reconnecting(req.Header.Get(mcp.HeaderLastEventID))
	resp, err := o.base.RoundTrip(req)
	status := 0
	if err == nil {
		status = resp.StatusCode
	}
	c.reconnected(attempt, last, delay, status, err)
	if err == nil && status == http.StatusOK {
		o.t.tap(req.Context(), c, resp)
	}
	return resp, err
}

// tap replaces resp.Body with one that reports what passes through it:
// every message of an event stream as it is read, or the JSON answer once
// read in full. c is the call whose stream this is, or nil.
func (t *Tracker) tap(ctx context.Context, c *Call, resp *http.Response) {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	b := &tappedBody{rc: resp.Body, t: t, c: c, ctx: ctx}
	switch {
	case mt == mcp.ContentTypeSSE:
		b.sse = &eventScanner{emit: b.event}
	case mt == mcp.ContentTypeJSON && c != nil:
		b.json = &bytes.Buffer{}
	default:
		return
	}
	resp.Body = b
}

type tappedBody struct {
	rc     io.ReadCloser
	t      *Tracker
	c      *Call
	ctx    context.Context
	sse    *eventScanner
	json   *bytes.Buffer
	tooBig bool // the JSON answer exceeded maxPeekBytes and is not parsed
	closed atomic.Bool
	once   sync.Once
}

func (b *tappedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.feed(p[:n])
	}
	if err != nil {
		b.once.Do(func() { b.finish(err) })
	}
	return n, err
}

func (b *tappedBody) Close() error {
	b.closed.Store(true)
	return b.rc.Close()
}

func (b *tappedBody) feed(p []byte) {
	switch {
	case b.sse != nil:
		b.sse.feed(p)
	case !b.tooBig && b.json.Len()+len(p) <= maxPeekBytes:
		b.json.Write(p)
	default:
		b.tooBig = true
		b.json.Reset()
	}
}

// finish reports the end of the body: a JSON answer is parsed, and a call's
// stream that ends before its answer, other than by the SDK closing it or
// cancelling the request, is a break.
func (b *tappedBody) finish(err error) {
	if b.json != nil && !b.tooBig && err == io.EOF {
		if msgs, _, perr := mcp.ParseBody(b.json.Bytes()); perr == nil {
			for _, m := range msgs {
				b.message(m, 0)
			}
		}
	}
	if b.c == nil || b.closed.Load() || b.ctx.Err() != nil {
		return
	}
	if err == io.EOF && b.c.Answered() {
		return
	}
	b.c.broke(Classify(err), err)
}

func (b *tappedBody) event(ev sseEvent) {
	id := int64(0)
	if ev.HasID {
		id = ParseEventID(ev.ID)
	}
	if len(ev.Data) == 0 || (ev.Name != "" && ev.Name != "message") {
		if b.c != nil && id > 0 {
			b.c.saw(mcp.Message{}, id)
		}
		return
	}
	m, err := mcp.ParseMessage(ev.Data)
	if err != nil {
		return
	}
	b.message(m, id)
}

func (b *tappedBody) message(m mcp.Message, eventID int64) {
	if m.Method == mcp.MethodProgress {
		var p mcp.ProgressParams
		if json.Unmarshal(m.Params, &p) == nil {
			b.t.noteWire(p, eventID)
		}
	}
	if b.c != nil {
		b.c.saw(m, eventID)
	}
}

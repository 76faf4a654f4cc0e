package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"time"

	"github.com/chaosrun/chaosrun/wire/mcp"
)

// maxErrorBody bounds how much of a non-2xx body is kept for classification.
const maxErrorBody = 64 << 10

// conn is one logical client's HTTP side: its endpoint, its own
// http.Client, and the session it currently holds.
type conn struct {
	hc       *http.Client
	endpoint string
	// readTimeout, if positive, breaks an exchange silent for that long.
	readTimeout time.Duration
	// live reports that a session is open; session is "" on a server
	// that issues none.
	live     bool
	session  string
	protocol string
	// modern is a 2026-07-28 connection: no session, every request
	// carrying its version and identity (client) in _meta and headers.
	modern bool
	client string
	tasks  bool // declare the tasks extension (2026-07-28)
	// legacyTasks asks for the 2025-11-25 tasks; taskTools are the tools
	// this session's server runs as tasks (it declared the capability
	// and lists them with execution.taskSupport optional or required).
	legacyTasks bool
	runsTasks   bool // the session's server declared tasks.requests.tools.call
	taskTools   map[string]bool
}

// taskTool reports whether a call of tool is to be made as a 2025-11-25
// task on this session.
func (c *conn) taskTool(tool string) bool { return c.legacyTasks && c.taskTools[tool] }

// adopt takes over a session opened earlier (by a previous run of the
// client).
func (c *conn) adopt(session, protocol string) {
	c.live, c.session, c.protocol = true, session, protocol
}

// drop forgets the session. A 2026-07-28 connection has none to forget.
func (c *conn) drop() {
	if c.modern {
		return
	}
	c.live, c.session, c.protocol, c.runsTasks, c.taskTools = false, "", "", false, nil
}

// reuseWindow is how long a connection that finished an exchange is kept
// for the next request, as the HTTP clients of real MCP clients keep theirs
// (Go's default transport for 90 s). A session's opening (initialize, its
// notification) and its calls then go over one connection instead of one
// each: at thousands of sessions the proxy's work per connection was most
// of what the machine did while they started, and a loaded client can take
// seconds between two requests of its own, so the window is long. A pooled
// connection its peer closed (a balancer's keep-alive timeout, a restart, a
// reset) is dropped by the transport once it reads the close, and a request
// the transport finds it could not write it sends again on a fresh
// connection; a request written just as the close crosses it fails as a
// request on a fresh connection cut after its write does, with an unknown
// outcome, never as a call that did not run.
const reuseWindow = 30 * time.Second

// newConn builds a connection with its own transport, keeping at most one
// idle connection and for reuseWindow only.
func newConn(endpoint string, readTimeout time.Duration) *conn {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1,
		IdleConnTimeout:     reuseWindow,
	}
	return &conn{hc: &http.Client{Transport: tr}, endpoint: endpoint, readTimeout: readTimeout}
}

func (c *conn) close() { c.hc.CloseIdleConnections() }

// exchange is one request in progress: its response, and the context and
// watchdog that bound it.
type exchange struct {
	resp     *http.Response
	cancel   context.CancelFunc
	wd       *watchdog
	answered bool // the response the request waited for was read
}

// drainWait and drainBytes bound the reading of what follows an answer on
// its stream: a server ends the stream of a request once it answered it,
// and reading that end is what lets the connection carry the next
// request. A stream that goes on is cut instead.
const (
	drainWait  = 100 * time.Millisecond
	drainBytes = 64 << 10
)

func (x *exchange) close() {
	x.wd.stop()
	if x.resp != nil && x.answered {
		t := time.AfterFunc(drainWait, x.cancel)
		_, _ = io.CopyN(io.Discard, x.resp.Body, drainBytes)
		t.Stop()
	}
	if x.resp != nil {
		x.resp.Body.Close()
	}
	x.cancel()
}

// activity tells the watchdog the stream is alive.
func (x *exchange) activity() { x.wd.touch() }

// err translates a failure of the exchange: the watchdog's firing is
// ErrSilent, and the end of the caller's context is that context's error.
func (x *exchange) err(ctx context.Context, err error) error {
	if x.wd.fired.Load() {
		return fmt.Errorf("%w: %w", ErrSilent, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// watchdog cancels an exchange that has been silent for its duration.
type watchdog struct {
	d     time.Duration
	t     *time.Timer
	fired atomic.Bool
}

func newWatchdog(d time.Duration, cancel context.CancelFunc) *watchdog {
	w := &watchdog{d: d}
	if d > 0 {
		w.t = time.AfterFunc(d, func() { w.fired.Store(true); cancel() })
	}
	return w
}

func (w *watchdog) touch() {
	if w.t != nil {
		w.t.Reset(w.d)
	}
}

func (w *watchdog) stop() {
	if w.t != nil {
		w.t.Stop()
	}
}

// do sends a request built against the connection's session. A transport
// failure is returned as the error; any status is left to the caller.
func (c *conn) do(ctx context.Context, method string, body []byte, lastEventID string, extra http.Header) (*exchange, error) {
	rctx, cancel := context.WithCancel(ctx)
	x := &exchange{cancel: cancel, wd: newWatchdog(c.readTimeout, cancel)}
	req, err := http.NewRequestWithContext(rctx, method, c.endpoint, bytes.NewReader(body))
	if err != nil {
		x.close()
		return nil, fmt.Errorf("request: %w", err)
	}
	c.headers(req, method, lastEventID)
	for k, v := range extra {
		req.Header[k] = v
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		err = x.err(ctx, err)
		x.close()
		return nil, err
	}
	x.resp = resp
	x.activity()
	return x, nil
}

func (c *conn) headers(req *http.Request, method, lastEventID string) {
	if method == http.MethodPost {
		req.Header.Set("Content-Type", mcp.ContentTypeJSON)
		req.Header.Set("Accept", mcp.ContentTypeJSON+", "+mcp.ContentTypeSSE)
	} else {
		req.Header.Set("Accept", mcp.ContentTypeSSE)
	}
	if c.session != "" {
		req.Header.Set(mcp.HeaderSessionID, c.session)
	}
	switch {
	case c.modern:
		req.Header.Set(mcp.HeaderProtocolVersion, mcp.Version20260728)
	case c.protocol != "":
		req.Header.Set(mcp.HeaderProtocolVersion, c.protocol)
	}
	if lastEventID != "" {
		req.Header.Set(mcp.HeaderLastEventID, lastEventID)
	}
}

// post sends one JSON-RPC message; at 2026-07-28 with its method and name
// mirrored into Mcp-Method and Mcp-Name.
func (c *conn) post(ctx context.Context, m mcp.Message) (*exchange, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", m.Method, err)
	}
	var extra http.Header
	if c.modern && m.Method != "" {
		extra = http.Header{http.CanonicalHeaderKey(mcp.HeaderMethod): {m.Method}}
		if member, named := mcp.NamedMethod(m.Method); named {
			if f, ok := mcp.ReadRequestFields(m.Params); ok {
				extra[http.CanonicalHeaderKey(mcp.HeaderName)] = []string{mcp.EncodeHeaderValue(f.Member(member))}
			}
		}
	}
	return c.do(ctx, http.MethodPost, b, "", extra)
}

// resume opens the stream after lastEventID by GET.
func (c *conn) resume(ctx context.Context, lastEventID string) (*exchange, error) {
	return c.do(ctx, http.MethodGet, nil, lastEventID, nil)
}

// meta is the _meta of a request on this connection: the progress token,
// and at 2026-07-28 the version, the client's identity and capabilities.
func (c *conn) meta(progressToken any) *mcp.RequestMeta {
	m := &mcp.RequestMeta{ProgressToken: progressToken}
	if c.modern {
		m.ProtocolVersion = mcp.Version20260728
		m.ClientInfo = &mcp.Implementation{Name: c.client, Version: "chaosrun"}
		m.ClientCapabilities = json.RawMessage(`{}`)
		if c.tasks {
			m.ClientCapabilities = json.RawMessage(`{"extensions":{"` + mcp.ExtensionTasks + `":{}}}`)
		}
	}
	return m
}

// discover asks a 2026-07-28 server what it speaks, in place of a
// session: the connection is live once the server lists 2026-07-28. A
// server that does not (a legacy one, or one that refuses) is an error:
// the experiment asked for 2026-07-28, so the client does not fall back.
func (c *conn) discover(ctx context.Context, id json.RawMessage) error {
	req := mcp.Message{JSONRPC: "2.0", ID: id, Method: mcp.MethodDiscover}
	params, err := json.Marshal(struct {
		Meta *mcp.RequestMeta `json:"_meta"`
	}{c.meta(nil)})
	if err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	req.Params = params
	x, err := c.post(ctx, req)
	if err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	defer x.close()
	if err := okStatus(x.resp); err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	res, err := readResponse(ctx, x, req.ID)
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return fmt.Errorf("server/discover: %w", err)
	}
	var dr mcp.DiscoverResult
	if err := json.Unmarshal(res.Result, &dr); err != nil {
		return fmt.Errorf("server/discover: result: %w", err)
	}
	if !slices.Contains(dr.SupportedVersions, mcp.Version20260728) {
		return fmt.Errorf("server/discover: the server does not speak %s (it lists %v)", mcp.Version20260728, dr.SupportedVersions)
	}
	c.live, c.session, c.protocol = true, "", mcp.Version20260728
	return nil
}

// initialize opens a new session for the client and announces it ready. It
// sets the connection's session and negotiated protocol.
func (c *conn) initialize(ctx context.Context, id int64, client, version string) error {
	c.drop()
	req, err := mcp.NewRequest(id, mcp.MethodInitialize, mcp.InitializeParams{
		ProtocolVersion: version,
		Capabilities:    json.RawMessage(`{}`),
		ClientInfo:      mcp.Implementation{Name: client, Version: "chaosrun"},
	})
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	x, err := c.post(ctx, req)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	defer x.close()
	if err := okStatus(x.resp); err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	res, err := readResponse(ctx, x, req.ID)
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	var ir mcp.InitializeResult
	if err := json.Unmarshal(res.Result, &ir); err != nil {
		return fmt.Errorf("initialize: result: %w", err)
	}
	if !mcp.SupportedVersion(ir.ProtocolVersion) {
		return fmt.Errorf("initialize: server chose unsupported protocol version %q", ir.ProtocolVersion)
	}
	c.session, c.protocol = x.resp.Header.Get(mcp.HeaderSessionID), ir.ProtocolVersion
	if err := c.initialized(ctx); err != nil {
		c.drop()
		return err
	}
	c.live, c.runsTasks = true, c.legacyTasks && serverRunsToolTasks(ir.Capabilities)
	return nil
}

// serverRunsToolTasks reports whether initialize's capabilities declare
// tasks.requests.tools.call (2025-11-25).
func serverRunsToolTasks(caps json.RawMessage) bool {
	var cp struct {
		Tasks *struct {
			Requests struct {
				Tools struct {
					Call json.RawMessage `json:"call"`
				} `json:"tools"`
			} `json:"requests"`
		} `json:"tasks"`
	}
	return json.Unmarshal(caps, &cp) == nil && cp.Tasks != nil && len(cp.Tasks.Requests.Tools.Call) > 0
}

// listTaskTools asks tools/list which tools may run as tasks: those with
// execution.taskSupport optional or required. One page is read: the
// targets list two tools.
func (c *conn) listTaskTools(ctx context.Context, id int64) (map[string]bool, error) {
	req, err := mcp.NewRequest(id, mcp.MethodToolsList, nil)
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	x, err := c.post(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	defer x.close()
	if err := okStatus(x.resp); err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	res, err := readResponse(ctx, x, req.ID)
	if err == nil && res.Error != nil {
		err = res.Error
	}
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	var l struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(res.Result, &l); err != nil {
		return nil, fmt.Errorf("tools/list: result: %w", err)
	}
	out := map[string]bool{}
	for _, t := range l.Tools {
		if t.Execution != nil && (t.Execution.TaskSupport == mcp.TaskSupportOptional || t.Execution.TaskSupport == mcp.TaskSupportRequired) {
			out[t.Name] = true
		}
	}
	return out, nil
}

func (c *conn) initialized(ctx context.Context) error {
	n, err := mcp.NewNotification(mcp.MethodInitialized, nil)
	if err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	x, err := c.post(ctx, n)
	if err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	defer x.close()
	if err := okStatus(x.resp); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

// statusError is a non-2xx answer.
type statusError struct {
	status int
	body   []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("status %d: %s", e.status, bytes.TrimSpace(e.body))
}

func okStatus(resp *http.Response) error {
	if resp.StatusCode/100 == 2 {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &statusError{status: resp.StatusCode, body: body}
}

// readResponse reads a JSON or SSE answer up to the response with the given
// id, skipping everything else.
func readResponse(ctx context.Context, x *exchange, id json.RawMessage) (mcp.Message, error) {
	want := mcp.IDString(id)
	if isJSON(x.resp) {
		m, err := readJSON(ctx, x)
		if err == nil && m.IDString() != want {
			err = fmt.Errorf("response id %s, want %s", m.IDString(), want)
		}
		x.answered = err == nil
		return m, err
	}
	er := mcp.NewEventReader(x.resp.Body)
	er.OnActivity = x.activity
	for {
		ev, err := er.Next()
		if err != nil {
			return mcp.Message{}, x.err(ctx, err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		m, err := mcp.ParseMessage(ev.Data)
		if err == nil && m.IsResponse() && m.IDString() == want {
			x.answered = true
			return m, nil
		}
	}
}

func readJSON(ctx context.Context, x *exchange) (mcp.Message, error) {
	b, err := io.ReadAll(io.LimitReader(x.resp.Body, mcp.MaxEventBytes))
	if err != nil {
		return mcp.Message{}, x.err(ctx, err)
	}
	m, err := mcp.ParseMessage(b)
	if err != nil {
		return mcp.Message{}, err
	}
	if !m.IsResponse() {
		return mcp.Message{}, errors.New("JSON answer is not a response")
	}
	return m, nil
}

func isJSON(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == mcp.ContentTypeJSON
}

package gosdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/workload"
	mcpwire "github.com/chaosrun/chaosrun/wire/mcp"
)

// RunClient drives the go-sdk's own client (mcp.NewClient over a
// StreamableClientTransport) through c's calls, one after another, and
// writes the history to opts.History (see sdkclient.Run). clientInfo.name
// is c.ID.
//
// The adapter never retries a call the SDK sent. When the SDK reports its
// session broken (ClientSession.Wait returned, or it refused to send a call
// with ErrConnectionClosed), the call goes out on a new session: the old
// one is closed through the SDK (which sends DELETE unless the server
// answered 404) and recorded as session_lost.
func RunClient(ctx context.Context, opts workload.Options, c workload.Client) error {
	return sdkclient.Run(ctx, opts, c, Target, func(tr *sdkclient.Tracker, httpc *http.Client) (sdkclient.Driver, error) {
		cl := &client{opts: opts, tr: tr, httpc: httpc}
		cl.sdk = mcp.NewClient(&mcp.Implementation{Name: c.ID, Version: SDKVersion}, &mcp.ClientOptions{
			Logger: opts.Logger,
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				tr.Progress(req.Params.ProgressToken, req.Params.Progress)
			},
		})
		return cl, nil
	})
}

type client struct {
	opts  workload.Options
	tr    *sdkclient.Tracker
	httpc *http.Client
	sdk   *mcp.Client
	live  *session
}

// session is one SDK session and the signal of its end.
type session struct {
	cs   *mcp.ClientSession
	dead chan struct{} // closed when ClientSession.Wait returns
	err  error         // what Wait returned; read after dead is closed
}

func (s *session) id() string {
	if s == nil {
		return ""
	}
	return s.cs.ID()
}

// Call makes one call, on a new session if the live one broke.
func (c *client) Call(ctx context.Context, spec workload.Call) {
	args, argErr := spec.Arguments()
	s, connErr := c.session(ctx)
	cctx, call := c.tr.Begin(ctx, spec, s.id())
	switch {
	case argErr != nil:
		call.End(false, argErr)
		return
	case connErr != nil:
		call.End(false, fmt.Errorf("connect: %w", connErr))
		return
	}
	params := &mcp.CallToolParams{Name: spec.Tool, Arguments: args}
	params.SetProgressToken(call.Token())
	res, err := s.cs.CallTool(cctx, params)
	if errors.Is(err, mcp.ErrConnectionClosed) && !call.Sent() {
		// The SDK refused to send: the session broke after the previous
		// call returned. Sending the call on a new session is its first
		// send, not a retry.
		c.drop()
		if s, err = c.session(ctx); err != nil {
			call.End(false, fmt.Errorf("connect: %w", err))
			return
		}
		call.Move(s.id())
		res, err = s.cs.CallTool(cctx, params)
	}
	call.End(res != nil && res.IsError, err)
}

// session returns the live session, first replacing one the SDK reported
// broken.
func (c *client) session(ctx context.Context) (*session, error) {
	if c.live != nil {
		select {
		case <-c.live.dead:
			c.drop()
		default:
			return c.live, nil
		}
	}
	t := &mcp.StreamableClientTransport{
		Endpoint: c.opts.Endpoint, HTTPClient: c.httpc, MaxRetries: maxRetries(c.opts.Backoff.Retries),
	}
	cs, err := c.sdk.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocol(c.opts.Protocol)})
	if err != nil {
		return nil, err
	}
	s := &session{cs: cs, dead: make(chan struct{})}
	go func() {
		s.err = cs.Wait()
		close(s.dead)
	}()
	c.live = s
	c.tr.SessionNew(cs.ID(), cs.InitializeResult().ProtocolVersion)
	return s, nil
}

// dropWait bounds how long drop waits for a broken session to end: the SDK
// ends it only after its best-effort DELETE, which it bounds by 5 s.
const dropWait = 6 * time.Second

// drop gives up the live session, recording why the SDK ended it.
func (c *client) drop() {
	s := c.live
	c.live = nil
	timer := time.NewTimer(dropWait)
	defer timer.Stop()
	reason, detail := "abandoned", "the session did not end"
	select {
	case <-s.dead:
		detail = ""
		if s.err != nil {
			detail = s.err.Error()
		}
		if errors.Is(s.err, mcp.ErrSessionMissing) {
			reason = "status_404"
		}
	case <-timer.C:
	}
	_ = s.cs.Close()
	c.tr.SessionLost(s.cs.ID(), reason, detail)
}

// Close closes the live session.
func (c *client) Close() {
	if c.live != nil {
		_ = c.live.cs.Close()
		c.live = nil
	}
}

// maxRetries maps workload.Backoff.Retries onto
// StreamableClientTransport.MaxRetries: 0 keeps the SDK default (5), a
// negative count disables reconnection.
func maxRetries(n int) int {
	if n < 0 {
		return -1
	}
	return n
}

// protocol is the version asked for in initialize: the workload's, else the
// newest version that still has sessions and resumption (the SDK's own
// default, 2026-07-28, has neither).
func protocol(v string) string {
	if v == "" {
		return mcpwire.LatestVersion
	}
	return v
}

package mcpgo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/workload"
	mcpwire "github.com/chaosrun/chaosrun/wire/mcp"
)

// RunClient drives mcp-go's own client (client.NewStreamableHttpClient)
// through c's calls, one after another, and writes the history to
// opts.History (see sdkclient.Run). clientInfo.name is c.ID.
//
// The adapter never retries a call. mcp-go keeps using its session after
// a failed call; only when the server answered 404 (transport
// ErrSessionTerminated, after which the SDK refuses every request but
// initialize) does the next call initialize again, recording session_lost
// and session_new. Besides, RunClient fails when the SDK's client cannot be
// built.
func RunClient(ctx context.Context, opts workload.Options, c workload.Client) error {
	return sdkclient.Run(ctx, opts, c, Target, func(tr *sdkclient.Tracker, httpc *http.Client) (sdkclient.Driver, error) {
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler) // the SDK would log to slog.Default
		}
		sdk, err := client.NewStreamableHttpClient(opts.Endpoint,
			transport.WithHTTPBasicClient(httpc), transport.WithHTTPLogger(log))
		if err != nil {
			return nil, err
		}
		if err := sdk.Start(ctx); err != nil {
			return nil, err
		}
		sdk.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == mcpwire.MethodProgress {
				p, _ := n.Params.AdditionalFields["progress"].(float64)
				tr.Progress(n.Params.AdditionalFields["progressToken"], p)
			}
		})
		return &runner{opts: opts, id: c.ID, tr: tr, sdk: sdk}, nil
	})
}

type runner struct {
	opts    workload.Options
	id      string
	tr      *sdkclient.Tracker
	sdk     *client.Client
	session string
	ready   bool // initialize succeeded and the server has not answered 404 since
}

// Call makes one call, initializing first unless a session is ready.
func (r *runner) Call(ctx context.Context, spec workload.Call) {
	args, argErr := spec.Arguments()
	connErr := r.initialize(ctx)
	cctx, call := r.tr.Begin(ctx, spec, r.session)
	switch {
	case argErr != nil:
		call.End(false, argErr)
		return
	case connErr != nil:
		call.End(false, fmt.Errorf("initialize: %w", connErr))
		return
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = spec.Tool
	req.Params.Arguments = args
	req.Params.Meta = &mcp.Meta{ProgressToken: call.Token()}
	res, err := r.sdk.CallTool(cctx, req)
	call.End(res != nil && res.IsError, err)
	if errors.Is(err, transport.ErrSessionTerminated) {
		r.ready = false
		r.tr.SessionLost(r.session, "status_404", err.Error())
	}
}

// Close closes the SDK's client.
func (r *runner) Close() { _ = r.sdk.Close() }

// initialize runs the initialize handshake unless a session is ready.
func (r *runner) initialize(ctx context.Context) error {
	if r.ready {
		return nil
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = protocol(r.opts.Protocol)
	req.Params.ClientInfo = mcp.Implementation{Name: r.id, Version: SDKVersion}
	res, err := r.sdk.Initialize(ctx, req)
	if err != nil {
		return err
	}
	r.ready, r.session = true, r.sdk.GetSessionId()
	r.tr.SessionNew(r.session, res.ProtocolVersion)
	return nil
}

// protocol is the version asked for in initialize: the workload's, else the
// newest version that still has sessions and resumption. Asking for a
// version before 2026-07-28 also keeps mcp-go from probing with
// server/discover first.
func protocol(v string) string {
	if v == "" {
		return mcpwire.LatestVersion
	}
	return v
}

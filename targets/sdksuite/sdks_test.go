package sdksuite

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/gosdk"
	"github.com/chaosrun/chaosrun/targets/mcpgo"
	"github.com/chaosrun/chaosrun/targets/server"
	"github.com/chaosrun/chaosrun/targets/workload"
)

// runFunc runs one logical client's calls, as every client target does.
type runFunc func(context.Context, workload.Options, workload.Client) error

// handler is what every server of the suite offers.
type handler interface {
	Handler() http.Handler
	Close() error
}

// serverConfig is what the suite sets on a server, whichever it is.
type serverConfig struct {
	recorder        sideeffects.Recorder
	retentionEvents int
	sessionTTL      time.Duration
	chargeDuration  time.Duration // the charge tool's default duration
	stateless       bool          // speak 2026-07-28 (a server with modern set)
}

// sdk is one real MCP SDK under the suite: its adapters' constructors and
// what the tests ask of it alone.
type sdk struct {
	name    string // the target's name, in histories and ledger sources
	module  string // the SDK's module path, pinned in go.mod at version
	version string
	// terminateUnsupported is why its /control/terminate answers 501.
	terminateUnsupported string
	server               serverTarget
	client               clientTarget
}

// serverTarget is a server the clients of the suite run against: an SDK's,
// or the reference server.
type serverTarget struct {
	name  string
	start func(serverConfig) (handler, error)
	serverBehaviour
}

// serverBehaviour is how a server behaves where the servers differ.
type serverBehaviour struct {
	// primes: a 2025-11-25 POST stream opens with a priming event, whose
	// id a client can resume from, before the tool says anything.
	primes bool
	// retry: its priming events carry a retry field.
	retry bool
	// replays: a stream resumed after a cut replays the events the client
	// missed on it.
	replays bool
	// splitsProgress: a call's progress notifications are shared out
	// between the call's own stream and the session's standalone GET
	// stream, with no fault at all.
	splitsProgress bool
	// evicted is the plain-text body of the 400 answering a Last-Event-ID
	// whose events are gone.
	evicted string
	// expireWaitsForCalls: closing a session waits for its running calls;
	// meanwhile new requests on it are answered 200 with a priming event
	// and no response, the running call's result is dropped, and only then
	// does the session answer 404. Otherwise the session is gone at once
	// and a running call's result still reaches its open POST.
	expireWaitsForCalls bool
	// dead is what a closed session's id gets.
	dead deadAnswers
	// modern: it speaks 2026-07-28 (serverConfig.stateless).
	modern bool
	// cancelsClosedStream: at 2026-07-28 it takes a call's closed response
	// stream as the call's cancellation.
	cancelsClosedStream bool
}

// deadAnswers are the statuses a closed session's id gets.
type deadAnswers struct {
	post   int // a POST
	resume int // a GET with Last-Event-ID of one of its events
	listen int // a GET without Last-Event-ID
}

// clientTarget is an SDK's client.
type clientTarget struct {
	name string
	run  runFunc
	clientBehaviour
}

// clientBehaviour is how a client behaves where the clients differ.
type clientBehaviour struct {
	// listens: it opens the standalone GET stream after initialize.
	listens bool
	// resumesBroken: a stream that breaks off (reset, EOF) is resumed by
	// GET with Last-Event-ID when an event id was read on it. Every client
	// resumes a stream the server ended cleanly after an event id.
	resumesBroken bool
	// resumeRefusalEndsSession: any non-2xx answer to a resume ends the
	// whole session (else only a 404 does).
	resumeRefusalEndsSession bool
	// ownDelay is the least time it waits before it resumes a stream that
	// broke, where the server sent no retry field.
	ownDelay time.Duration
	// modern: it speaks 2026-07-28 when the workload asks.
	modern bool
}

// sdks is the table the suite runs over.
var sdks = []sdk{
	{
		name: gosdk.Target, module: "github.com/modelcontextprotocol/go-sdk", version: gosdk.SDKVersion,
		terminateUnsupported: gosdk.TerminateUnsupported,
		server: serverTarget{name: gosdk.Target, start: startGoSDK, serverBehaviour: serverBehaviour{
			// With an event store every 2025-11-25 POST stream opens with
			// a priming event (index 0) and no retry field: the SDK sends
			// retry only in a close event a tool asks for.
			primes: true, retry: false,
			// A dropped POST does not cancel the tool; what it sends goes
			// to the event store and is replayed to a GET with
			// Last-Event-ID.
			replays: true,
			// Notifications go to the stream of the request they belong to.
			splitsProgress: false,
			// An id whose events the store dropped gets the same answer as
			// an unknown stream.
			evicted: "failed to replay events\n",
			// ServerSession.Close waits for the session's in-flight calls.
			expireWaitsForCalls: true,
			// 404 "session not found" for an unknown id on POST, GET and
			// DELETE.
			dead: deadAnswers{post: http.StatusNotFound, resume: http.StatusNotFound, listen: http.StatusNotFound},
			// StreamableHTTPOptions.Stateless; PropagateRequestCancellation
			// is off by default, so the handler's context outlives the POST.
			modern: true, cancelsClosedStream: false,
		}},
		client: clientTarget{name: gosdk.Target, run: gosdk.RunClient, clientBehaviour: clientBehaviour{
			// The standalone GET stream is opened after initialize.
			listens: true,
			// A stream that breaks is resumed when an event id was read on
			// it (a priming event gives one).
			resumesBroken: true,
			// Any status other than 2xx on the reconnect ends the whole
			// session, transient ones included; the SDK never initializes
			// again (the adapter does, for the next call).
			resumeRefusalEndsSession: true,
			// 1 s × 1.5^(n−1) plus full jitter: 1–2 s for the first.
			ownDelay: time.Second,
			// ClientSessionOptions.ProtocolVersion; it connects with
			// server/discover.
			modern: true,
		}},
	},
	{
		name: mcpgo.Target, module: "github.com/mark3labs/mcp-go", version: mcpgo.SDKVersion,
		terminateUnsupported: mcpgo.TerminateUnsupported,
		server: serverTarget{name: mcpgo.Target, start: startMCPGo, serverBehaviour: serverBehaviour{
			// No priming event and no retry field; a call's response is
			// plain JSON unless the tool sent a notification first.
			primes: false, retry: false,
			// A dropped POST cancels the call's context, and the call's
			// later notifications go to the standalone stream (or a
			// queue), not to its own.
			replays: false,
			// A session's notifications are read from one channel by both
			// the call's stream and the standalone stream.
			splitsProgress: true,
			// Its stores cannot tell an evicted id from one never issued.
			evicted: "Unknown Last-Event-ID\n",
			// DELETE, the idle sweeper and /control/expire terminate the
			// id and purge its events at once.
			expireWaitsForCalls: false,
			// Stateful, a POST for a terminated session gets 404; its
			// events are purged, so a resume gets 400; a GET without
			// Last-Event-ID is not checked and opens a new listening
			// stream under the dead id.
			dead: deadAnswers{post: http.StatusNotFound, resume: http.StatusBadRequest, listen: http.StatusOK},
			// The adapter does not drive the SDK's stateless handler.
			modern: false,
		}},
		client: clientTarget{name: mcpgo.Target, run: mcpgo.RunClient, clientBehaviour: clientBehaviour{
			// WithContinuousListening is off by default.
			listens: false,
			// Only a stream the server ended cleanly is resumed.
			resumesBroken: false,
			// Any non-200 answer fails the call; only a 404 (on any
			// request) ends the transport's session.
			resumeRefusalEndsSession: false,
			// A clean end is resumed after the server's retry field, else
			// after 1 s.
			ownDelay: time.Second,
			// The adapter does not drive the SDK's 2026-07-28 client.
			modern: false,
		}},
	},
}

// reference is the reference server as a peer of the SDK servers, with a
// 20 ms retry field on its priming events.
var reference = serverTarget{name: "reference", start: startReference, serverBehaviour: serverBehaviour{
	// Every 2025-11-25 stream opens with a priming event carrying the
	// retry field; the session's event log replays a resumed stream.
	primes: true, retry: true, replays: true, splitsProgress: false,
	// A closed 2026-07-28 response stream cancels the call.
	modern: true, cancelsClosedStream: true,
}}

// servers are the servers every client of the suite runs against.
func servers() []serverTarget {
	out := make([]serverTarget, 0, len(sdks)+1)
	for _, s := range sdks {
		out = append(out, s.server)
	}
	return append(out, reference)
}

func startGoSDK(cfg serverConfig) (handler, error) {
	return gosdk.NewServer(gosdk.ServerConfig{
		Recorder: cfg.recorder, RetentionEvents: cfg.retentionEvents, SessionTTL: cfg.sessionTTL,
		DefaultChargeDuration: cfg.chargeDuration, Stateless: cfg.stateless,
	})
}

func startMCPGo(cfg serverConfig) (handler, error) {
	if cfg.stateless {
		return nil, errors.New("the mcp-go adapter does not drive the SDK's stateless handler")
	}
	return mcpgo.NewServer(mcpgo.ServerConfig{
		Recorder: cfg.recorder, RetentionEvents: cfg.retentionEvents, SessionTTL: cfg.sessionTTL,
		DefaultChargeDuration: cfg.chargeDuration,
	})
}

// referenceRetry is the retry field of the reference server's priming
// events in the suite: short, so that a client honouring it is told from
// one waiting its own delay of a second or more.
const referenceRetry = 20 * time.Millisecond

func startReference(cfg serverConfig) (handler, error) {
	return server.New(server.Config{
		Recorder: cfg.recorder, RetentionEvents: cfg.retentionEvents, SessionTTL: cfg.sessionTTL,
		DefaultChargeDuration: cfg.chargeDuration, Retry: referenceRetry,
	})
}

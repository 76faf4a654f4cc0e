package groundtruth

import "fmt"

// Range is what an oracle establishes of a figure: a value from Lo to Hi
// (exact when they are equal), or nothing at all (Known false), with where
// it comes from or why it is not known.
type Range struct {
	Known  bool
	Lo, Hi int64
	Source string
}

// Exactly is a figure the oracle knows exactly.
func Exactly(n int64, source string) Range { return Range{Known: true, Lo: n, Hi: n, Source: source} }

// Between is a figure the oracle knows lies from lo to hi.
func Between(lo, hi int64, source string) Range {
	return Range{Known: true, Lo: min(lo, hi), Hi: max(lo, hi), Source: source}
}

// Unknown is a figure the oracle cannot establish, and why.
func Unknown(why string) Range { return Range{Source: why} }

// Exact reports whether r is known to one value.
func (r Range) Exact() bool { return r.Known && r.Lo == r.Hi }

// Contains reports whether n lies in r (false when r is unknown).
func (r Range) Contains(n int64) bool { return r.Known && r.Lo <= n && n <= r.Hi }

// Minus is r - s: known only when both are.
func (r Range) Minus(s Range) Range {
	if !r.Known || !s.Known {
		return Unknown(firstUnknown(r, s))
	}
	return Range{Known: true, Lo: max(r.Lo-s.Hi, 0), Hi: max(r.Hi-s.Lo, 0), Source: r.Source + "; " + s.Source}
}

func firstUnknown(rs ...Range) string {
	for _, r := range rs {
		if !r.Known {
			return r.Source
		}
	}
	return ""
}

func (r Range) String() string {
	switch {
	case !r.Known:
		return "not established"
	case r.Lo == r.Hi:
		return fmt.Sprint(r.Lo)
	default:
		return fmt.Sprintf("%d to %d", r.Lo, r.Hi)
	}
}

// Call outcomes as a program's own record tells them.
const (
	OutcomeOK      = "ok"      // the result was read (an isError result too: it was read)
	OutcomeFailed  = "failed"  // the client reported the call failed
	OutcomeUnknown = "unknown" // the client reported the outcome unknown
	OutcomeNone    = ""        // the client reported nothing: it gave the call up, or died in it
)

// Call is one logical call a client made, as its own record tells it.
type Call struct {
	Client string // the logical client (a worker, a workload client)
	ID     string // the client's name for the call, when it has one
	Tool   string
	// Key is the value that names the operation (the workload's key path
	// in its arguments), "" when the record does not show it. Keyed says
	// the workload declares that path (key:, or charge's order_id): calls
	// with one key value are then one operation, by the user's word.
	Key   string
	Keyed bool
	// Idempotent comes from the experiment's workload (the user's word).
	Idempotent bool
	Outcome    string
	// ResultRead says the client read the server's answer to the call (a
	// result or a JSON-RPC error), not a transport failure.
	ResultRead bool
	// Attempts counts the times the client sent it (1 for a client that
	// never sends a call twice).
	Attempts int
	// BlindRetry says the client sent it again after an attempt that
	// reached the server and whose outcome it never read.
	BlindRetry bool
	// Hit is the client's own account of a fault hitting the call in
	// flight (a transport failure, a stream break), "" when it shows none.
	Hit string
	// Received counts the events the client received for the call, and
	// Gapped those inside gaps it surfaced.
	Received, Gapped int64
	// Requests name its attempts as the server's record names its
	// executions (see Execution.Request), when the client's record shows
	// them.
	Requests []string
	Evidence string
}

// Execution is one tool call a server ran, as its own record tells it.
type Execution struct {
	Tool    string
	Key     string // the operation's key value, "" when the record does not show the arguments
	Session string
	// Request names the request it ran, "session request-id" (with no
	// session, the client instead), when the record shows it.
	Request string
	// Completed says the server produced the call's answer (result or
	// error); Committed that its side effect happened (a successful,
	// non-error execution).
	Completed, Committed bool
	// Emitted counts the events it sent, when EmittedKnown.
	Emitted      int64
	EmittedKnown bool
	Evidence     string
}

// ServerRecord is what a server's own record establishes of a run.
type ServerRecord struct {
	Program string
	// Executions are the tool calls it ran, when ExecutionsKnown.
	Executions      []Execution
	ExecutionsKnown bool
	// KeysShown says the record shows each execution's operation key.
	KeysShown bool
	Sessions  Range // sessions it opened
	Emitted   Range // events it sent, in all
	// Resumable says it keeps the events of a stream for a client to
	// resume with Last-Event-ID: a client's SDK may then resume a broken
	// stream without its program ever seeing the break.
	Resumable bool
	// Refused is the server's own error for calls it refused before
	// running them (an unknown tool), "" when none was refused.
	Refused string
	Limits  []string
}

// ClientRecord is what a client's own record establishes of a run.
type ClientRecord struct {
	Program string
	Calls   []Call
	// CallsMade counts the logical calls it made: len(Calls), or a range
	// when it does not print every call (one in flight when it stops).
	CallsMade Range
	// NeverResends says, by the client's source, that it never sends a
	// call twice: every execution on the server is a call of its own.
	NeverResends bool
	// Abandoned says it gave up calls without reporting them (at the end
	// of a load test), so some outcome is not in its record.
	Abandoned bool
	Received  Range // events it received, in all
	Gapped    Range // of the missing events, those inside gaps it surfaced
	Forks     Range // sessions a logical client opened while it held another live
	Sessions  Range // sessions it was handed
	// Died is the client's own account of dying ("" when it did not): its
	// fatal line. Exit is its exit code as the runtime kept it.
	Died string
	Exit *int
	// ExitUS is when it ended on the run's clock, and Stopped says the
	// harness told it to stop (the run's deadline).
	ExitUS  int64
	Stopped bool
	// FaultUS is when the first fault was injected, on the run's clock
	// (the runner's fault log), -1 when none was.
	FaultUS int64
	// NoCalls says the client never calls a tool, whatever it is asked.
	NoCalls bool
	Limits  []string
}

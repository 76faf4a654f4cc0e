package faults

import (
	"context"
	"errors"
	"fmt"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"

	"github.com/chaosrun/chaosrun/faults/toxics"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/internal/field"
)

// How an idle timeout closes a connection, and how a partition holds them.
const (
	CloseFIN      = "fin"
	CloseReset    = "reset"
	ModeRefuse    = "refuse"
	ModeBlackhole = "blackhole"
)

// IdleTimeout is a load balancer's read timeout: the proxy closes a
// connection once Idle has passed with no byte from the server to the
// client (the idle_timeout toxic). The timer starts when the connection
// opens, or at the injection for a connection already open, and restarts
// on every byte. Close picks a FIN or an RST; an RST needs the connection
// to have been opened after the run began (see [Run]). The toxic stays For
// (absent: until the run ends); removing it closes nothing. Its scheduled
// window is Idle.
type IdleTimeout struct {
	Idle  dur.Duration `yaml:"idle" json:"idle"`
	Close string       `yaml:"close" json:"close"`
	For   dur.Duration `yaml:"for" json:"for,omitempty"`
}

// Validate requires a positive idle, a close of fin or reset, and a window
// long enough for the timeout to fire.
func (p *IdleTimeout) Validate() error {
	if err := positive("idle", p.Idle); err != nil {
		return err
	}
	if err := oneOf("close", p.Close, CloseFIN, CloseReset); err != nil {
		return err
	}
	if err := notNegative("for", p.For); err != nil {
		return err
	}
	if p.For != 0 && p.For <= p.Idle {
		return field.Errorf("for", "must exceed idle (%s), or the timeout never fires", p.Idle)
	}
	return nil
}

// ClosesByReset says whether the timeout closes by RST (close: reset).
func (p *IdleTimeout) ClosesByReset() bool { return p.Close == CloseReset }

func (p *IdleTimeout) window() dur.Duration { return p.Idle }
func (p *IdleTimeout) hold() dur.Duration   { return p.For }

func (p *IdleTimeout) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	h, detail, err := r.toxic(in, "", toxics.TypeIdleTimeout, Downstream,
		toxiclient.Attributes{"idle": millis(p.Idle)})
	if err != nil {
		return nil, "", err
	}
	switch {
	case p.Close == CloseReset:
		detail += "; closes by RST (connections opened since the run began have linger 0)"
	case r.linger:
		detail += "; closes by RST, not FIN: this run also asks for resets, so every connection has linger 0"
	default:
		detail += "; closes by FIN"
	}
	return h, detail, nil
}

// Reset resets connections: the proxy agent closes both sockets of each
// with an RST (SO_LINGER 0), whatever the connection's linger, without
// touching the proxy's toxic chains, so bytes a toxic holds for it (a
// latency's) are lost with it, as bytes not yet delivered are with any
// reset. It needs the proxy agent's observer ([Env.Edges]).
//
// Without For it is one event, After after the fault's time (Plan
// schedules it there): every connection open through the proxy at that
// instant, and none other, is reset; the log's window runs from the
// instant the agent took them to the instant it had reset them all. With
// For, the agent keeps doing it for the window: each connection open at
// the injection, and each opened before the window ends, is reset After
// after the later of the injection and its own opening (After 0: at once,
// a reset storm), if that comes before the window ends; the log's window
// is from the agent's start to its stop. The scheduled window is For (0
// for the one event).
type Reset struct {
	After dur.Duration `yaml:"after" json:"after"`
	For   dur.Duration `yaml:"for" json:"for,omitempty"`
}

// Validate requires a window, when given, longer than After.
func (p *Reset) Validate() error {
	if err := notNegative("after", p.After); err != nil {
		return err
	}
	if err := notNegative("for", p.For); err != nil {
		return err
	}
	if p.For != 0 && p.For <= p.After {
		return field.Errorf("for", "must exceed after (%s), or no connection is reset", p.After)
	}
	return nil
}

// ClosesByReset is true: a reset closes by RST.
func (p *Reset) ClosesByReset() bool { return true }

// CutsRequests: a reset may cut a request before it crossed whole.
func (p *Reset) CutsRequests() bool { return true }

func (p *Reset) window() dur.Duration { return p.For }
func (p *Reset) hold() dur.Duration   { return p.For }

// delay moves the one event to After past the fault's time.
func (p *Reset) delay() dur.Duration {
	if p.For > 0 {
		return 0
	}
	return p.After
}

func (p *Reset) inject(ctx context.Context, r *run, in Injection) (heal, string, error) {
	e := r.env.Edges
	if e == nil {
		return nil, "", errors.New("no proxy agent observer in this run: the agent resets the connections it observes")
	}
	if p.For == 0 {
		n, from, to, err := e.Reset(ctx)
		if err != nil {
			return nil, "", err
		}
		in.acted.fromUS, in.acted.toUS = from, to
		return nil, fmt.Sprintf("%s reset by the proxy agent: every one open at the instant", count(n, "connection")), nil
	}
	id := fmt.Sprintf("%s-%d-%d", in.Kind, in.Index, in.Repeat)
	from, err := e.StartResets(ctx, id, time.Duration(p.After))
	if err != nil {
		return nil, "", err
	}
	in.acted.fromUS = from
	h := func(ctx context.Context) error {
		n, to, err := e.StopResets(ctx, id)
		if err != nil {
			return err
		}
		in.acted.toUS, in.acted.healed = to, fmt.Sprintf("%s reset", count(n, "connection"))
		return nil
	}
	return h, fmt.Sprintf("resets %s by the proxy agent: each connection %s after the later of now and its opening, until healed", id, time.Duration(p.After)), nil
}

// Latency delays every chunk on Stream (default downstream) by Latency,
// plus or minus up to Jitter (Toxiproxy's latency toxic), for For (absent:
// until the run ends).
type Latency struct {
	Latency dur.Duration `yaml:"latency" json:"latency"`
	Jitter  dur.Duration `yaml:"jitter" json:"jitter,omitempty"`
	Stream  string       `yaml:"stream" json:"stream,omitempty"`
	For     dur.Duration `yaml:"for" json:"for,omitempty"`
}

// Validate requires a positive latency and a jitter no larger than it.
func (p *Latency) Validate() error {
	if err := positive("latency", p.Latency); err != nil {
		return err
	}
	if p.Jitter < 0 || p.Jitter > p.Latency {
		return field.Errorf("jitter", "must be between 0 and latency (%s)", p.Latency)
	}
	if _, err := stream(p.Stream); err != nil {
		return err
	}
	return notNegative("for", p.For)
}

func (p *Latency) window() dur.Duration { return p.For }
func (p *Latency) hold() dur.Duration   { return p.For }

func (p *Latency) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	s, _ := stream(p.Stream)
	return r.toxic(in, "", "latency", s, toxiclient.Attributes{
		"latency": millis(p.Latency), "jitter": millis(p.Jitter),
	})
}

// Bandwidth limits Stream (default downstream) to Rate KB/s (Toxiproxy's
// bandwidth toxic) for For (absent: until the run ends). The rate is not
// scaled by time_scale: byte counts are not.
type Bandwidth struct {
	Rate   int64        `yaml:"rate" json:"rate"`
	Stream string       `yaml:"stream" json:"stream,omitempty"`
	For    dur.Duration `yaml:"for" json:"for,omitempty"`
}

// Validate requires a positive rate.
func (p *Bandwidth) Validate() error {
	if p.Rate <= 0 {
		return field.Errorf("rate", "must be a positive number of KB/s")
	}
	if _, err := stream(p.Stream); err != nil {
		return err
	}
	return notNegative("for", p.For)
}

func (p *Bandwidth) window() dur.Duration { return p.For }
func (p *Bandwidth) hold() dur.Duration   { return p.For }

func (p *Bandwidth) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	s, _ := stream(p.Stream)
	return r.toxic(in, "", "bandwidth", s, toxiclient.Attributes{"rate": p.Rate})
}

// Slicer splits every chunk on Stream (default downstream) into pieces of
// about AverageSize bytes (give or take SizeVariation) sent Delay apart
// (Toxiproxy's slicer toxic), for For (absent: until the run ends).
type Slicer struct {
	AverageSize   int          `yaml:"average_size" json:"average_size"`
	SizeVariation int          `yaml:"size_variation" json:"size_variation,omitempty"`
	Delay         dur.Duration `yaml:"delay" json:"delay,omitempty"`
	Stream        string       `yaml:"stream" json:"stream,omitempty"`
	For           dur.Duration `yaml:"for" json:"for,omitempty"`
}

// Validate requires a positive average size and a variation below it.
func (p *Slicer) Validate() error {
	if p.AverageSize <= 0 {
		return field.Errorf("average_size", "must be a positive number of bytes")
	}
	if p.SizeVariation < 0 || p.SizeVariation >= p.AverageSize {
		return field.Errorf("size_variation", "must be between 0 and average_size - 1")
	}
	if err := notNegative("delay", p.Delay); err != nil {
		return err
	}
	if _, err := stream(p.Stream); err != nil {
		return err
	}
	return notNegative("for", p.For)
}

func (p *Slicer) window() dur.Duration { return p.For }
func (p *Slicer) hold() dur.Duration   { return p.For }

func (p *Slicer) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	s, _ := stream(p.Stream)
	return r.toxic(in, "", "slicer", s, toxiclient.Attributes{
		"average_size": p.AverageSize, "size_variation": p.SizeVariation, "delay": micros(p.Delay),
	})
}

// LimitData closes each connection once Bytes have passed on Stream
// (default downstream) since the toxic started on it (Toxiproxy's
// limit_data toxic), for For (absent: until the run ends).
type LimitData struct {
	Bytes  int64        `yaml:"bytes" json:"bytes"`
	Stream string       `yaml:"stream" json:"stream,omitempty"`
	For    dur.Duration `yaml:"for" json:"for,omitempty"`
}

// CutsRequests: a connection closed after its bytes may cut a request in
// the middle.
func (p *LimitData) CutsRequests() bool { return true }

// Validate requires a positive byte count.
func (p *LimitData) Validate() error {
	if p.Bytes <= 0 {
		return field.Errorf("bytes", "must be positive")
	}
	if _, err := stream(p.Stream); err != nil {
		return err
	}
	return notNegative("for", p.For)
}

func (p *LimitData) window() dur.Duration { return p.For }
func (p *LimitData) hold() dur.Duration   { return p.For }

func (p *LimitData) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	s, _ := stream(p.Stream)
	return r.toxic(in, "", "limit_data", s, toxiclient.Attributes{"bytes": p.Bytes})
}

// Partition cuts the client off from the server for For, then heals.
//
// Mode refuse disables the proxy: every connection through it is closed and
// new ones are refused (ECONNREFUSED) until the heal, when it listens again
// on the same address. Mode blackhole stalls both directions of every
// connection, open or new (new connections are still accepted: the proxy
// cannot drop SYNs); nothing is closed, and the heal delivers every held
// byte. Overlapping partitions of one mode heal when the last one ends.
type Partition struct {
	For  dur.Duration `yaml:"for" json:"for"`
	Mode string       `yaml:"mode" json:"mode"`
}

// CutsRequests: a refusing partition refuses the client's connections;
// a blackhole holds their bytes and loses none.
func (p *Partition) CutsRequests() bool { return p.Mode != "blackhole" }

// Validate requires a positive window and a mode of refuse or blackhole.
func (p *Partition) Validate() error {
	if err := positive("for", p.For); err != nil {
		return err
	}
	return oneOf("mode", p.Mode, ModeRefuse, ModeBlackhole)
}

func (p *Partition) window() dur.Duration { return p.For }
func (p *Partition) hold() dur.Duration   { return p.For }

func (p *Partition) inject(ctx context.Context, r *run, in Injection) (heal, string, error) {
	if p.Mode == ModeRefuse {
		return r.refuse(ctx)
	}
	return r.blackhole(ctx)
}

// blackhole stalls both directions for a blackhole partition. Overlapping
// ones share one pair of stall toxics and heal when the last one ends:
// a second stall in the chain would never read what the first one passes
// on at its removal, and Toxiproxy's removal of the first would wait on
// it, holding both partitions past their windows.
func (r *run) blackhole(ctx context.Context) (heal, string, error) {
	const up, down = "partition-blackhole-up", "partition-blackhole-down"
	on := func(context.Context) error {
		if err := r.addToxic(up, toxics.TypeStall, Upstream, 1, nil); err != nil {
			return err
		}
		if err := r.addToxic(down, toxics.TypeStall, Downstream, 1, nil); err != nil {
			return errors.Join(err, r.removeToxic(up))
		}
		return nil
	}
	off := func(context.Context) error { return errors.Join(r.removeToxic(up), r.removeToxic(down)) }
	return r.shared(ctx, "blackhole", on, off, fmt.Sprintf("toxics %s and %s (stall both directions)", up, down))
}

// HTTPStatus makes the proxy answer new HTTP requests with Status, the way
// a load balancer with no healthy backend does, without the request
// reaching the server (the http_status and http_status_gate toxics; see
// package faults/toxics for the exact contract). Count bounds the number of
// requests answered (0: every request), For how long the answer stays
// (absent: until the run ends).
type HTTPStatus struct {
	Status int          `yaml:"status" json:"status"`
	Count  int64        `yaml:"count" json:"count,omitempty"`
	For    dur.Duration `yaml:"for" json:"for,omitempty"`
}

// AnswersForTheServer: the proxy answers the requests it picks.
func (p *HTTPStatus) AnswersForTheServer() bool { return true }

// Validate requires a 4xx or 5xx status and a count that is not negative.
func (p *HTTPStatus) Validate() error {
	if p.Status < 400 || p.Status > 599 {
		return field.Errorf("status", "must be an HTTP status from 400 to 599 (e.g. 503), got %d", p.Status)
	}
	if p.Count < 0 {
		return field.Errorf("count", "must not be negative (0 answers every request)")
	}
	return notNegative("for", p.For)
}

func (p *HTTPStatus) window() dur.Duration { return p.For }
func (p *HTTPStatus) hold() dur.Duration   { return p.For }

func (p *HTTPStatus) inject(_ context.Context, r *run, in Injection) (heal, string, error) {
	answer, detail, err := r.toxic(in, "-answer", toxics.TypeHTTPStatus, Downstream,
		toxiclient.Attributes{"status": p.Status})
	if err != nil {
		return nil, "", err
	}
	gate, detail2, err := r.toxic(in, "-gate", toxics.TypeHTTPStatusGate, Upstream,
		toxiclient.Attributes{"count": p.Count})
	if err != nil {
		return nil, "", errors.Join(err, answer(context.Background()))
	}
	// The gate goes first, so no request it swallowed is left unanswered.
	h := func(ctx context.Context) error {
		if err := gate(ctx); err != nil {
			return err
		}
		return answer(ctx)
	}
	return h, detail + "; " + detail2, nil
}

// count is n and noun, plural when n is not 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

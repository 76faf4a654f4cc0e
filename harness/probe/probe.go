package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// DefaultTimeScale is the time scale of a probe's experiments: a 10-minute
// disconnect runs in 30 s.
const DefaultTimeScale = 0.05

// Options configure a probe: of a server (Server) or of a client (Client).
type Options struct {
	// Server is the server under test; Client, when set, makes the probe
	// one of that client instead (against chaosrun's reference server).
	Server Server
	Client *Client
	// Protocols limits the revisions probed; empty: every revision.
	Protocols []string
	// Only limits a server probe to some parts of its battery (see
	// Parts); empty: all of it.
	Only []string
	// TimeScale multiplies every real-world duration (default
	// DefaultTimeScale); Seed seeds every experiment.
	TimeScale float64
	Seed      int64
	// Limits bound the searches.
	Limits Limits
	// Out is the probe's folder; Parallel bounds the experiments running
	// at once.
	Out      string
	Parallel int
	// NewRuntime and RuntimeName choose the runtime (nil: local).
	NewRuntime  harness.RuntimeFactory
	RuntimeName string
	// Progress receives one line per experiment and per finding; nil
	// discards.
	Progress io.Writer
}

// Limits bound what a probe tries.
type Limits struct {
	// MaxAway is the longest disconnect tried, at real-world scale
	// (default 10m).
	MaxAway time.Duration
	// SearchRuns bounds the experiments of one search (default 12).
	SearchRuns int
	// Precision is the relative width at which a search over time stops
	// (default 0.05).
	Precision float64
}

func (l Limits) withDefaults() Limits {
	if l.MaxAway <= 0 {
		l.MaxAway = 10 * time.Minute
	}
	if l.SearchRuns <= 0 {
		l.SearchRuns = 12
	}
	if l.Precision <= 0 {
		l.Precision = 0.05
	}
	return l
}

// Server is a server under test.
type Server struct {
	// Spec is the experiment's server: mapping (target and knobs).
	Spec map[string]any
	// URL, when set, is a server already running on loopback: nothing is
	// started, and process faults are unavailable.
	URL string
	// Stream is a call whose stream carries progress events (the event
	// checks); Effect a call with a side effect (stream close, re-issue).
	Stream, Effect lab.Call
	// TimeStream, when set, is a shorter stream call for the searches over
	// time, which a client reading a long stream would fall behind.
	TimeStream *lab.Call
	// Chosen says how the tools were chosen, for the report.
	Chosen string
}

// Target is the server's target name.
func (s Server) Target() string {
	t, _ := s.Spec["target"].(string)
	if t == "" {
		return targets.Reference
	}
	return t
}

// Report is a finished probe.
type Report struct {
	Subject   string    `json:"subject"`
	Kind      string    `json:"kind"` // server | client
	Protocols []string  `json:"protocols"`
	Notes     []string  `json:"notes,omitempty"`
	Checks    []Check   `json:"checks"`
	Started   time.Time `json:"started"`
	WallMS    int64     `json:"wall_ms"`
	// Experiments counts the experiments the probe ran.
	Experiments int    `json:"experiments"`
	Dir         string `json:"dir"`
}

// prober runs one probe.
type prober struct {
	opts   Options
	lab    *lab.Lab
	limits Limits
	mu     sync.Mutex
	all    []*lab.Outcome
	notes  []string
}

// The parts of a server probe's battery (Options.Only).
const (
	PartEvents      = "retention-events" // the search over missed events, and the answer to an evicted cursor
	PartTime        = "time"             // the search over time away: retention in time, the idle TTL, 404 after it
	PartUnknown     = "cursor-unknown"   // a Last-Event-ID never issued
	PartStreamClose = "stream-close"     // a stream cut mid-call: cancelled? result kept?
	PartReissue     = "reissue"          // the same call twice
)

// Parts lists the parts of a server probe's battery.
var Parts = []string{PartEvents, PartTime, PartUnknown, PartStreamClose, PartReissue}

// wants reports whether the probe runs part.
func (o Options) wants(part string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, part) }

// ErrInput marks options a probe cannot run with.
var ErrInput = errors.New("invalid probe input")

// Revisions lists the revisions a probe of the server covers, and why any
// asked for are left out.
func (o Options) Revisions() ([]string, []string) {
	all := spec.Protocols()
	asked := all
	if len(o.Protocols) > 0 {
		asked = o.Protocols
	}
	var out, notes []string
	for _, p := range asked {
		if !slices.Contains(all, p) {
			notes = append(notes, fmt.Sprintf("%s is not a revision chaosrun speaks (%v)", p, all))
			continue
		}
		if o.Client == nil {
			if why := spec.Unspoken(false, o.Server.Target(), p); why != "" {
				notes = append(notes, fmt.Sprintf("%s not probed: %s", p, why))
				continue
			}
		}
		out = append(out, p)
	}
	return out, notes
}

// Run probes, writes the probe's files into opts.Out and returns the
// report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	if opts.TimeScale <= 0 {
		opts.TimeScale = DefaultTimeScale
	}
	p := &prober{opts: opts, limits: opts.Limits.withDefaults(),
		lab: &lab.Lab{Out: opts.Out, Parallel: max(opts.Parallel, 1), NewRuntime: opts.NewRuntime, RuntimeName: opts.RuntimeName}}
	for _, part := range opts.Only {
		if !slices.Contains(Parts, part) {
			return nil, fmt.Errorf("%w: unknown part %q (parts: %v)", ErrInput, part, Parts)
		}
	}
	revs, notes := opts.Revisions()
	p.notes = append(p.notes, notes...)
	rep := &Report{Kind: "server", Protocols: revs, Started: time.Now(), Dir: opts.Out}
	var checks []Check
	if opts.Client != nil {
		rep.Kind, rep.Subject = "client", opts.Client.describe()
		checks = p.clientBattery(ctx)
	} else {
		if len(revs) == 0 {
			return nil, fmt.Errorf("%w: no revision to probe (%v)", ErrInput, notes)
		}
		rep.Subject = opts.Server.describe()
		if opts.Server.URL != "" {
			p.notes = append(p.notes, "the server was already running at "+opts.Server.URL+": process faults (restart, crash, pause) are unavailable, and no probe uses them")
		}
		if opts.Server.Chosen != "" {
			p.notes = append(p.notes, opts.Server.Chosen)
		}
		checks = p.serverBattery(ctx, revs)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if _, err := p.lab.Finish(p.all); err != nil {
		return nil, err
	}
	rep.Checks, rep.Notes = checks, p.notes
	rep.WallMS = time.Since(rep.Started).Milliseconds()
	rep.Experiments = p.lab.Ran()
	return rep, rep.Save(opts.Out)
}

// describe names the server for the report.
func (s Server) describe() string {
	if s.URL != "" {
		return "server at " + s.URL
	}
	keys := slices.Sorted(maps.Keys(s.Spec))
	out := ""
	for _, k := range keys {
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%s: %v", k, s.Spec[k])
	}
	return "server {" + out + "}"
}

// run runs one experiment and keeps its outcome; a generator error is a
// defect and is returned.
func (p *prober) run(ctx context.Context, x *lab.Experiment) (*lab.Outcome, error) {
	o, err := p.lab.Run(ctx, x)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.all = append(p.all, o)
	p.mu.Unlock()
	return o, nil
}

// say writes a progress line.
func (p *prober) say(format string, args ...any) { lab.Say(p.opts.Progress, format, args...) }

// real returns a wall-clock duration of a run as the real-world duration
// an experiment file states.
func (p *prober) real(wall time.Duration) time.Duration {
	return time.Duration(float64(wall) / p.opts.TimeScale)
}

// wall returns a real-world duration at run scale.
func (p *prober) wall(real time.Duration) time.Duration {
	return time.Duration(float64(real) * p.opts.TimeScale)
}

// experiment starts an experiment of the server under test with the
// resumable client (a file cursor and a quick backoff) at protocol.
func (p *prober) experiment(name, about, protocol string, calls []lab.Call, away time.Duration) *lab.Experiment {
	server := maps.Clone(p.opts.Server.Spec)
	if p.opts.Server.URL != "" {
		server = map[string]any{"target": targets.Command, "command": holdCommand(), "listen": hostPort(p.opts.Server.URL)}
	}
	// Enough reconnects to outlast the disconnect: the client's delays are
	// drawn below its 2 s cap, so count one per second of it.
	retries := int(away/time.Second) + 40
	client := map[string]any{"target": targets.Resumable, "cursor": "file", "protocol": protocol,
		"backoff": map[string]any{"initial": "1s", "max": "2s", "retries": min(retries, 1000)}}
	return &lab.Experiment{
		Name:        name,
		Description: about,
		Seed:        p.opts.Seed,
		TimeScale:   p.opts.TimeScale,
		Server:      server,
		Client:      client,
		Workload:    lab.Workload{Calls: calls},
	}
}

// modern reports whether the revision has no sessions.
func modern(protocol string) bool { return mcp.ModernVersion(protocol) }

// Estimate is what a probe will take, said before it starts.
type Estimate struct {
	About          string
	MaxExperiments int
	// Typical assumes nothing is evicted or expires early; Longest that
	// every search runs to its bound at the longest disconnect.
	Typical, Longest time.Duration
}

// perRun is a generous wall time for one short generated experiment.
const perRun = 4 * time.Second

// Estimate says how many experiments the probe runs at most and about how
// long it takes, from its limits alone.
func (o Options) Estimate() Estimate {
	if o.TimeScale <= 0 {
		o.TimeScale = DefaultTimeScale
	}
	l := o.Limits.withDefaults()
	par := time.Duration(max(o.Parallel, 1))
	if o.Client != nil {
		n := 6
		return Estimate{About: "6 client experiments", MaxExperiments: n, Typical: time.Duration(n) * perRun / par, Longest: time.Duration(n) * 2 * perRun / par}
	}
	revs, _ := o.Revisions()
	awayWall := time.Duration(float64(l.MaxAway) * o.TimeScale)
	var n int
	var typical, longest time.Duration
	for _, r := range revs {
		if modern(r) {
			n += 2
			typical += 2 * perRun
			longest += 2 * perRun
			continue
		}
		runs := 6 + 2*l.SearchRuns + 4
		n += runs
		typical += time.Duration(runs)*perRun + 2*awayWall
		longest += time.Duration(runs) * (perRun + awayWall)
	}
	return Estimate{About: fmt.Sprintf("%d revision(s)", len(revs)), MaxExperiments: n, Typical: typical / par, Longest: longest / par}
}

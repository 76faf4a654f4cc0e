package explore

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/harness"
	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/lab"
	"github.com/chaosrun/chaosrun/internal/jsonl"
	"github.com/chaosrun/chaosrun/sideeffects/wire"
)

// A soak keeps one long workload running under a random schedule and
// watches the server over time: its resident memory and open descriptors
// (the runtime's samples, harness.SamplesFile) and the connections open at
// its edge (the wire). A leak is a finding, as a violation is.
//
// The workload is the base's calls made again and again, in order, until
// their durations (scaled by the base's time_scale) fill the soak's
// length; each repeat gets order ids of its own (args.order_id, or the
// call's top-level key argument, gets "-soak<r>"), so a repeat is a new
// operation and not a retry. The schedule draws a fault for every four
// max_window of the workload (at least one, at most 12), at times spread
// over it, from the bounds' kinds less crash, which would leave the server
// down for the rest of the soak unless the bounds name it.

// SoakOptions configure a soak.
type SoakOptions struct {
	Base string
	// For is how long the workload should run (wall time).
	For    time.Duration
	Seed   *int64
	Bounds Bounds
	Out    string
	// NewRuntime and RuntimeName choose the runtime (nil: local).
	NewRuntime  harness.RuntimeFactory
	RuntimeName string
	Progress    io.Writer
}

// Soak files in a soak's folder.
const (
	SoakJSONFile     = "soak.json"
	SoakMarkdownFile = "soak.md"
)

// Leak kinds: what a soak finds besides a verdict's violations.
const (
	LeakMemory      = "memory_growth"
	LeakDescriptors = "descriptors_left_open"
)

// SoakSummary is a finished soak.
type SoakSummary struct {
	Base     string   `json:"base"`
	Seed     int64    `json:"seed"`
	Bounds   Bounds   `json:"bounds"`
	Schedule []string `json:"schedule"`
	Calls    int      `json:"calls"`
	// Experiment is the soak's experiment folder, under the soak's
	// experiments folder; Verdict its verdict ("" when the harness
	// failed: Error says why).
	Experiment string   `json:"experiment"`
	Verdict    string   `json:"verdict"`
	Violations []string `json:"violations,omitempty"`
	Error      string   `json:"error,omitempty"`
	// Sampled says whether the runtime sampled the server; without
	// samples the memory and descriptors cannot be told.
	Sampled bool `json:"sampled"`
	// Series is the server over time, at most SoakPoints points.
	Series   []SoakPoint   `json:"series"`
	Findings []SoakFinding `json:"findings"`
	WallMS   int64         `json:"wall_ms"`
	Dir      string        `json:"dir"`
}

// SoakPoint is the server at one instant of the run.
type SoakPoint struct {
	TUS         int64 `json:"t_us"`
	Incarnation int   `json:"incarnation,omitempty"`
	RSSKiB      int64 `json:"rss_kib,omitempty"`
	FDs         int   `json:"fds,omitempty"`
	// Conns is how many connections were open at the server edge.
	Conns int `json:"conns"`
	// Faults names the faults active then.
	Faults []string `json:"faults,omitempty"`
}

// SoakFinding is one thing the soak found: a leak kind, the violated
// invariants, or harness_error.
type SoakFinding struct {
	Kind string `json:"kind"`
	Text string `json:"text"`
}

// SoakPoints bounds the series a soak reports.
const SoakPoints = 20

// Soak runs one long workload under a random schedule and reports the
// server over time. It writes the soak's folder: soak.md, soak.json and
// experiments/ (the run, saved and re-judgeable).
func Soak(ctx context.Context, opts SoakOptions) (*SoakSummary, error) {
	base, bounds, err := LoadBase(opts.Base)
	if err != nil {
		return nil, err
	}
	if opts.For <= 0 {
		return nil, fmt.Errorf("%w: give the soak a length", ErrInput)
	}
	if len(base.Workload.Calls) == 0 {
		return nil, fmt.Errorf("%w: %s: a soak repeats the workload's calls, and it has none", ErrInput, opts.Base)
	}
	bounds = merge(bounds, opts.Bounds)
	server, _ := base.Server["target"].(string)
	if len(bounds.Kinds) == 0 {
		bounds.Kinds = slices.DeleteFunc(DefaultKinds(server), func(k string) bool { return k == faults.KindCrash })
	}
	bounds = bounds.withDefaults(server)
	if opts.Seed != nil {
		base.Seed = *opts.Seed
	}
	started := time.Now()
	x, span := soakWorkload(base, opts.For)
	x.Expect = lab.Expect{Verdict: check.Inconclusive}
	sched, err := soakSchedule(x, bounds, span)
	if err != nil {
		return nil, err
	}
	for _, f := range sched {
		x.Faults = append(x.Faults, f.entry())
	}
	x.Name = "soak"
	x.Description = fmt.Sprintf("A soak drawn by chaosrun explore --soak from %s, seed %d: its workload repeated for %s under %d faults.",
		filepath.Base(opts.Base), base.Seed, opts.For, len(sched))
	x.Deadline = lab.Duration(2*opts.For + 5*time.Minute)
	sum := &SoakSummary{Base: opts.Base, Seed: base.Seed, Bounds: bounds, Schedule: describeAll(sched), Calls: len(x.Workload.Calls), Dir: opts.Out}
	lb := &lab.Lab{Out: opts.Out, Parallel: 1, NewRuntime: opts.NewRuntime, RuntimeName: opts.RuntimeName}
	lab.Say(opts.Progress, "[soak] %d calls for %s under: %s", sum.Calls, opts.For, describe(sched))
	o, err := lb.Run(ctx, x)
	if err != nil {
		return nil, err
	}
	if _, err := lb.Finish([]*lab.Outcome{o}); err != nil {
		return nil, err
	}
	dir := filepath.Join(opts.Out, lab.ExperimentsDir, o.Folder)
	sum.Experiment = filepath.ToSlash(filepath.Join(lab.ExperimentsDir, o.Folder))
	sum.Error = o.Error
	if o.Verdict != nil {
		sum.Verdict, sum.Violations = o.Verdict.Verdict, o.Verdict.Violations
	}
	samples, err := loadSamples(filepath.Join(dir, harness.SamplesFile))
	if err != nil {
		return nil, err
	}
	sum.Sampled = len(samples) > 0
	sum.Series, sum.Findings = analyse(samples, o.Wire, o.Faults)
	if len(sum.Violations) > 0 {
		sum.Findings = append(sum.Findings, SoakFinding{Kind: strings.Join(sum.Violations, "+"),
			Text: "the verdict is " + sum.Verdict + ": " + strings.Join(sum.Violations, ", ") + " violated"})
	}
	if o.Verdict == nil {
		sum.Findings = append(sum.Findings, SoakFinding{Kind: HarnessError, Text: o.Error})
	}
	sum.WallMS = time.Since(started).Milliseconds()
	return sum, sum.Save(opts.Out)
}

// soakWorkload returns the base with its calls repeated until their scaled
// durations fill d, and the workload's real-world span.
func soakWorkload(base *lab.Experiment, d time.Duration) (*lab.Experiment, time.Duration) {
	x := *base
	scale := cmp.Or(base.TimeScale, 1)
	var round time.Duration
	for _, c := range base.Workload.Calls {
		cd, _ := time.ParseDuration(c.Duration)
		round += cd
	}
	round = max(round, time.Second)
	repeats := max(1, int((float64(d)/scale+float64(round)-1)/float64(round)))
	x.Workload.Calls = nil
	for r := range repeats {
		for _, c := range base.Workload.Calls {
			c = c.Clone()
			if r > 0 {
				suffix := fmt.Sprintf("-soak%d", r)
				if id, ok := c.Args["order_id"].(string); ok {
					c.Args["order_id"] = id + suffix
				} else if v, ok := c.Args[c.Key].(string); ok && c.Key != "" {
					c.Args[c.Key] = v + suffix
				}
			}
			x.Workload.Calls = append(x.Workload.Calls, c)
		}
	}
	return &x, time.Duration(repeats) * round
}

// soakSchedule draws the soak's faults over the workload's span.
func soakSchedule(x *lab.Experiment, b Bounds, span time.Duration) (Schedule, error) {
	n := min(max(int(span/(4*b.MaxWindow)), 1), 12)
	var last error
	for attempt := range 100 {
		rng := rand.New(rand.NewPCG(uint64(x.Seed), uint64(1_000_000+attempt)))
		s := make(Schedule, n)
		for k := range s {
			s[k] = drawFault(rng, b, nil, span)
		}
		slices.SortStableFunc(s, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
		y := *x
		y.Faults = nil
		for _, f := range s {
			y.Faults = append(y.Faults, f.entry())
		}
		_, last = y.Parse()
		if last == nil {
			return s, nil
		}
	}
	return nil, fmt.Errorf("%w: no schedule of kinds %s is valid for the base's targets (the last drawn: %v)", ErrInput, strings.Join(b.Kinds, ", "), last)
}

func loadSamples(path string) ([]agent.Sample, error) {
	s, err := jsonl.Load(path, harness.ReadSamples)
	if os.IsNotExist(err) {
		return nil, nil // a runtime that does not sample
	}
	return s, err
}

// analyse turns the samples of the server (its first replica) and the
// wire into the soak's series and its leak findings.
//
// Memory: of the incarnation sampled longest (a restart starts afresh),
// the median of the samples in its last fifth against those between its
// first tenth and its third (after it warmed up); a growth of more than a
// quarter and 16 MiB, with the middle fifth above the start too (growth
// that kept on, not one step), is memory_growth. Descriptors: the
// incarnation's last sample, taken once the workload is over and every
// call settled, against its first, taken before any client came: more
// than a quarter and 8 more still open is descriptors_left_open.
func analyse(samples []agent.Sample, recs []wire.Record, entries []faults.Entry) ([]SoakPoint, []SoakFinding) {
	var server []agent.Sample
	for _, s := range samples {
		if s.Agent == samples[0].Agent {
			server = append(server, s)
		}
	}
	var findings []SoakFinding
	if inc := longestIncarnation(server); len(inc) >= 10 {
		q := func(from, to float64) int64 {
			lo, hi := int(from*float64(len(inc))), max(int(to*float64(len(inc))), int(from*float64(len(inc)))+1)
			return median(inc[lo:min(hi, len(inc))])
		}
		start, mid, end := q(0.1, 1.0/3), q(0.5, 0.7), q(0.8, 1)
		if grew := end - start; grew > 16<<10 && grew*4 > start && mid > start {
			findings = append(findings, SoakFinding{Kind: LeakMemory, Text: fmt.Sprintf(
				"the server's resident memory grew from %s to %s (%s in the middle) over %s of incarnation %d, and kept growing",
				mib(start), mib(end), mib(mid), seconds(inc[len(inc)-1].TUS-inc[0].TUS), inc[0].Incarnation)})
		}
	}
	if inc := longestIncarnation(server); len(inc) >= 2 {
		first, last := inc[0], inc[len(inc)-1]
		if left := last.FDs - first.FDs; left > 8 && left*4 > first.FDs {
			findings = append(findings, SoakFinding{Kind: LeakDescriptors, Text: fmt.Sprintf(
				"the server held %d descriptors once the workload was over and every call had settled, against %d before any client came (incarnation %d)",
				last.FDs, first.FDs, first.Incarnation)})
		}
	}
	return series(server, recs, entries), findings
}

// longestIncarnation returns the samples of the incarnation with the most.
func longestIncarnation(samples []agent.Sample) []agent.Sample {
	by := map[int][]agent.Sample{}
	best := 0
	for _, s := range samples {
		by[s.Incarnation] = append(by[s.Incarnation], s)
		if len(by[s.Incarnation]) > len(by[best]) {
			best = s.Incarnation
		}
	}
	return by[best]
}

func median(s []agent.Sample) int64 {
	v := make([]int64, len(s))
	for i, x := range s {
		v[i] = x.RSSKiB
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// series picks at most SoakPoints samples, evenly, and adds the
// connections open at the server edge and the faults active at each. With
// no samples, the points are the wire's, evenly over its span.
func series(samples []agent.Sample, recs []wire.Record, entries []faults.Entry) []SoakPoint {
	var points []SoakPoint
	if len(samples) > 0 {
		step := max(1, (len(samples)+SoakPoints-1)/SoakPoints)
		for i := 0; i < len(samples); i += step {
			s := samples[i]
			points = append(points, SoakPoint{TUS: s.TUS, Incarnation: s.Incarnation, RSSKiB: s.RSSKiB, FDs: s.FDs})
		}
		if last := samples[len(samples)-1]; points[len(points)-1].TUS != last.TUS {
			points = append(points, SoakPoint{TUS: last.TUS, Incarnation: last.Incarnation, RSSKiB: last.RSSKiB, FDs: last.FDs})
		}
	} else if len(recs) > 0 {
		from, to := recs[0].TUS, recs[len(recs)-1].TUS
		for i := range SoakPoints + 1 {
			points = append(points, SoakPoint{TUS: from + (to-from)*int64(i)/SoakPoints})
		}
	}
	for i := range points {
		p := &points[i]
		open := map[int64]bool{}
		for _, r := range recs {
			if r.Edge != wire.EdgeServer || r.TUS > p.TUS {
				continue
			}
			switch r.Kind {
			case wire.KindOpen:
				open[r.Conn] = true
			case wire.KindClose:
				delete(open, r.Conn)
			}
		}
		p.Conns = len(open)
		for _, e := range entries {
			if e.StartUS <= p.TUS && (e.EndUS == 0 || p.TUS <= e.EndUS) {
				p.Faults = append(p.Faults, e.Kind)
			}
		}
	}
	return points
}

func mib(kib int64) string { return fmt.Sprintf("%.1f MiB", float64(kib)/1024) }

func seconds(us int64) string { return fmt.Sprintf("%.1fs", float64(us)/1e6) }

// Save writes soak.json and soak.md into dir.
func (s *SoakSummary) Save(dir string) error {
	return save(dir, SoakJSONFile, SoakMarkdownFile, s, s.Markdown())
}

// Markdown is the soak's report.
func (s *SoakSummary) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# chaosrun soak: %s\n\nSeed %d; %d calls, %.1fs; faults: %s.\nExperiment: `%s` (verdict %s).\n\n",
		s.Base, s.Seed, s.Calls, float64(s.WallMS)/1000, strings.Join(s.Schedule, "; "), s.Experiment, cmpOr(s.Verdict, "none: "+s.Error))
	if !s.Sampled {
		b.WriteString("The runtime did not sample the server: its memory and descriptors cannot be told; the connections come from the wire.\n\n")
	}
	b.WriteString("| t | incarnation | resident memory | descriptors | connections at the server edge | faults active |\n|---:|---:|---:|---:|---:|---|\n")
	for _, p := range s.Series {
		mem, fds, inc := "cannot tell", "cannot tell", "-"
		if s.Sampled {
			mem, fds, inc = mib(p.RSSKiB), fmt.Sprint(p.FDs), fmt.Sprint(p.Incarnation)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d | %s |\n", seconds(p.TUS), inc, mem, fds, p.Conns, strings.Join(p.Faults, ", "))
	}
	if len(s.Findings) == 0 {
		b.WriteString("\nNo finding: no leak, no violation.\n")
		return b.String()
	}
	b.WriteString("\n## Findings\n\n")
	for _, f := range s.Findings {
		fmt.Fprintf(&b, "- **%s**: %s\n", f.Kind, f.Text)
	}
	return b.String()
}

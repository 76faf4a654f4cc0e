package lab

import (
	"fmt"
	"maps"
	"time"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/harness/spec"
	"gopkg.in/yaml.v3"
)

// Experiment is one generated experiment: the file the probe writes,
// parsed by package spec like any experiment file and run by the harness
// like any other. Until it has run its expect: block says inconclusive; the
// probe then saves it with the verdict it was found to reach (see
// [Experiment.Found]), so `chaosrun report` judges the saved run again and
// says whether its records still give that verdict.
type Experiment struct {
	Name        string           `yaml:"name"`
	Description string           `yaml:"description"`
	Seed        int64            `yaml:"seed"`
	TimeScale   float64          `yaml:"time_scale"`
	Server      map[string]any   `yaml:"server"`
	Client      map[string]any   `yaml:"client"`
	Workload    Workload         `yaml:"workload"`
	Faults      []map[string]any `yaml:"faults,omitempty"`
	Expect      Expect           `yaml:"expect"`
	// Deadline bounds the run in wall time (unscaled); "" is the runner's
	// default.
	Deadline string `yaml:"deadline,omitempty"`
	// Rest holds the parts of a base file the generator leaves as they are
	// (a balancer: block).
	Rest map[string]any `yaml:",inline"`
}

// Workload is the experiment's workload: one logical client's calls.
type Workload struct {
	Clients int    `yaml:"clients,omitempty"`
	Calls   []Call `yaml:"calls"`
}

// Call is one tools/call of a generated workload, as an experiment file
// writes it: arguments, a real-world duration, the argument that tells
// operations apart, and whether a second invocation is harmless.
type Call struct {
	Tool       string         `yaml:"tool" json:"tool"`
	Args       map[string]any `yaml:"args,omitempty" json:"args,omitempty"`
	Duration   string         `yaml:"duration,omitempty" json:"duration,omitempty"`
	Key        string         `yaml:"key,omitempty" json:"key,omitempty"`
	Idempotent *bool          `yaml:"idempotent,omitempty" json:"idempotent,omitempty"`
}

// Expect is the generated experiment's expect: block.
type Expect struct {
	Verdict    string   `yaml:"verdict"`
	Violations []string `yaml:"violations,omitempty"`
	CannotTell []string `yaml:"cannot_tell,omitempty"`
}

// Clone returns a copy of c whose arguments can be changed alone.
func (c Call) Clone() Call {
	c.Args = maps.Clone(c.Args)
	return c
}

// Duration returns d as an experiment file writes it.
func Duration(d time.Duration) string {
	if d <= 0 {
		return "0"
	}
	return d.Round(time.Millisecond).String()
}

// Fault writes one faults: entry.
func Fault(kind string, when map[string]any, at time.Duration, params map[string]any) map[string]any {
	f := map[string]any{"kind": kind}
	if when != nil {
		f["when"] = when
	}
	if at > 0 {
		f["at"] = Duration(at)
	}
	if len(params) > 0 {
		f["params"] = params
	}
	return f
}

// YAML renders the experiment file.
func (x *Experiment) YAML() ([]byte, error) {
	b, err := yaml.Marshal(x)
	if err != nil {
		return nil, fmt.Errorf("experiment %s: %w", x.Name, err)
	}
	return b, nil
}

// Parse validates the generated file as package spec validates any.
func (x *Experiment) Parse() (*spec.Experiment, error) {
	b, err := x.YAML()
	if err != nil {
		return nil, err
	}
	return spec.Parse(x.Name+".yaml", b)
}

// Found sets the expectation to what a run reached: its verdict, the
// invariants it violated and those its records could not prove.
func (x *Experiment) Found(v check.Verdict) {
	x.Expect = Expect{Verdict: v.Verdict}
	if len(v.Violations) > 0 {
		x.Expect.Violations = v.Violations
	}
	if len(v.CannotTell) > 0 {
		x.Expect.CannotTell = v.CannotTell
	}
}

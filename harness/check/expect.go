package check

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Sentinel errors of expectation parsing and validation, for callers that
// branch on the kind of input error.
var (
	ErrBound            = errors.New("malformed figure bound")
	ErrUnknownFigure    = errors.New("unknown figure")
	ErrUnknownInvariant = errors.New("unknown invariant")
	ErrVerdict          = errors.New("unknown verdict")
)

// boundOps are the comparisons a bound may start with, longest first so
// that ">=" is not read as ">".
var boundOps = []string{">=", "<=", "==", ">", "<"}

// boundSyntax says what a bound may be, for error messages.
const boundSyntax = `want a non-negative integer, optionally after ==, >=, <=, > or < (such as 0, "3", ">=1", "<=5")`

// Bound is a condition on one figure: Value compared with Op.
type Bound struct {
	Op    string // one of ==, >=, <=, >, <
	Value int64
}

// ParseBound parses a figure bound: a non-negative integer, optionally
// preceded by one of ==, >=, <=, > or <, as in 0, 3, ">=1", "<=5", ">0",
// "<2", "==4". A bare integer means ==. Spaces around the parts are allowed.
func ParseBound(s string) (Bound, error) {
	rest := strings.TrimSpace(s)
	op := "=="
	for _, o := range boundOps {
		if strings.HasPrefix(rest, o) {
			op, rest = o, strings.TrimSpace(rest[len(o):])
			break
		}
	}
	v, err := strconv.ParseUint(rest, 10, 63)
	if err != nil {
		return Bound{}, fmt.Errorf("%w %q: %s", ErrBound, s, boundSyntax)
	}
	return Bound{Op: op, Value: int64(v)}, nil
}

// Holds reports whether v meets the bound.
func (b Bound) Holds(v int64) bool {
	switch b.Op {
	case ">=":
		return v >= b.Value
	case "<=":
		return v <= b.Value
	case ">":
		return v > b.Value
	case "<":
		return v < b.Value
	default:
		return v == b.Value
	}
}

// Proven reports whether the bound is proven of a figure of value v and
// provenance p (observed when p.Kind is empty): an observed or derived
// figure proves it when v meets it; a lower bound proves only > and >=
// (the true figure is at least v), an upper bound only < and <=; a figure
// that cannot be told proves nothing. Why says what is missing when it is
// not proven although v meets it.
func (b Bound) Proven(v int64, p Provenance) (bool, string) {
	if !b.Holds(v) {
		return false, ""
	}
	switch p.Kind {
	case LowerBound:
		if b.Op == ">" || b.Op == ">=" {
			return true, ""
		}
		return false, "it is a lower bound (" + p.Why + ")"
	case UpperBound:
		if b.Op == "<" || b.Op == "<=" {
			return true, ""
		}
		return false, "it is an upper bound (" + p.Why + ")"
	case Unknown:
		return false, "the records cannot tell it (" + p.Why + ")"
	}
	return true, ""
}

// String renders the bound as ParseBound reads it, with its operator.
func (b Bound) String() string {
	op := b.Op
	if op == "" {
		op = "=="
	}
	return op + strconv.FormatInt(b.Value, 10)
}

// MarshalText renders the bound as [Bound.String].
func (b Bound) MarshalText() ([]byte, error) { return []byte(b.String()), nil }

// UnmarshalText parses the bound with [ParseBound].
func (b *Bound) UnmarshalText(text []byte) error {
	v, err := ParseBound(string(text))
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// UnmarshalJSON accepts a JSON number or string.
func (b *Bound) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return fmt.Errorf("%w: %w", ErrBound, err)
		}
		data = []byte(s)
	}
	return b.UnmarshalText(data)
}

// UnmarshalYAML accepts a scalar, quoted or not (0, "3", ">=1").
func (b *Bound) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%w: want a scalar such as 0 or \">=1\"", ErrBound)
	}
	return b.UnmarshalText([]byte(n.Value))
}

// Expectation is an experiment's expect: block.
type Expectation struct {
	// Verdict is the expected verdict: pass, fail or inconclusive.
	Verdict string `json:"verdict" yaml:"verdict"`
	// Violations, when given (non-nil), is the exact set of invariants
	// expected to be violated. An expected pass implies none.
	Violations []string `json:"violations,omitempty" yaml:"violations,omitempty"`
	// CannotTell, when given, is the exact set of invariants expected to
	// be cannot_tell: what the records of such a run do not prove.
	CannotTell []string `json:"cannot_tell,omitempty" yaml:"cannot_tell,omitempty"`
	// Figures bounds figures by name.
	Figures map[string]Bound `json:"figures,omitempty" yaml:"figures,omitempty"`
}

// Validate reports the first problem with the expectation, naming its field
// (verdict, violations[i], figures.NAME).
func (e Expectation) Validate() error {
	if !slices.Contains([]string{Pass, Fail, Inconclusive}, e.Verdict) {
		return fmt.Errorf("verdict: %w %q: want pass, fail or inconclusive", ErrVerdict, e.Verdict)
	}
	for i, id := range e.Violations {
		if !slices.Contains(InvariantIDs, id) {
			return fmt.Errorf("violations[%d]: %w %q: want one of %s", i, ErrUnknownInvariant, id, strings.Join(InvariantIDs, ", "))
		}
	}
	for i, id := range e.CannotTell {
		if !slices.Contains(InvariantIDs, id) {
			return fmt.Errorf("cannot_tell[%d]: %w %q: want one of %s", i, ErrUnknownInvariant, id, strings.Join(InvariantIDs, ", "))
		}
		if slices.Contains(e.Violations, id) {
			return fmt.Errorf("cannot_tell[%d]: %s is also expected violated", i, id)
		}
	}
	if e.Verdict == Pass && len(e.Violations) > 0 {
		return errors.New("violations: an expected pass has no violations")
	}
	if e.Verdict == Fail && e.Violations != nil && len(e.Violations) == 0 {
		return errors.New("violations: an expected fail violates something; name it or leave violations out")
	}
	for _, name := range sortedKeys(e.Figures) {
		if _, ok := (Figures{}).Value(name); !ok {
			return fmt.Errorf("figures.%s: %w: want one of %s", name, ErrUnknownFigure, strings.Join(FigureNames, ", "))
		}
	}
	return nil
}

// Match reports whether v meets the expectation: the verdict is equal; the
// set of violated invariants equals Violations when they are given (for an
// expected pass, none), and the set of invariants that cannot be told
// equals CannotTell when it is given; every figure bound is proven by the
// figure and its provenance ([Bound.Proven]); and no invariant was
// judged differently by the ledger's and the wire's accounts (a defect of
// the harness or of one record, which must not pass unseen). Reasons say
// what did not match, in that order; an invalid expectation never matches.
func (e Expectation) Match(v Verdict) (bool, []string) {
	if err := e.Validate(); err != nil {
		return false, []string{"invalid expectation: " + err.Error()}
	}
	var reasons []string
	if v.Verdict != e.Verdict {
		reasons = append(reasons, fmt.Sprintf("verdict is %s, expected %s", v.Verdict, e.Verdict))
	}
	if r, ok := v.Result(WorkloadRan); ok && !r.Held() {
		reasons = append(reasons, r.Summary)
		for _, e := range r.Evidence {
			reasons = append(reasons, e.Text)
		}
	}
	if e.Violations != nil || e.Verdict == Pass {
		got, want := idSet(v.Violations), idSet(e.Violations)
		if !slices.Equal(got, want) {
			reasons = append(reasons, fmt.Sprintf("violations are [%s], expected [%s]",
				strings.Join(got, ", "), strings.Join(want, ", ")))
		}
	}
	if e.CannotTell != nil {
		got, want := idSet(v.CannotTell), idSet(e.CannotTell)
		if !slices.Equal(got, want) {
			reasons = append(reasons, fmt.Sprintf("cannot tell [%s], expected [%s]",
				strings.Join(got, ", "), strings.Join(want, ", ")))
		}
	}
	for _, name := range sortedKeys(e.Figures) {
		b := e.Figures[name]
		got, _ := v.Figures.Value(name)
		switch ok, why := b.Proven(got, v.Provenance[name]); {
		case ok:
		case why != "":
			reasons = append(reasons, fmt.Sprintf("figure %s is %d, expected %s, not proven: %s", name, got, b, why))
		default:
			reasons = append(reasons, fmt.Sprintf("figure %s is %d, expected %s", name, got, b))
		}
	}
	for _, r := range v.Invariants {
		if r.Disagreement != "" {
			reasons = append(reasons, fmt.Sprintf("the accounts disagree on %s: the ledger's says %s, %s", r.ID, r.Status, r.Disagreement))
		}
	}
	return len(reasons) == 0, reasons
}

// idSet returns the ids sorted and without repeats.
func idSet(ids []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ids)))
}

func sortedKeys(m map[string]Bound) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

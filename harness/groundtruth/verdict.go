package groundtruth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Statuses of an invariant in a verdict, and the kinds of a figure, as the
// comparison reads them.
const (
	StatusHeld       = "held"
	StatusViolated   = "violated"
	StatusCannotTell = "cannot_tell"
	StatusNotJudged  = "not_judged"

	FigureLowerBound = "lower_bound"
	FigureUpperBound = "upper_bound"
	FigureCannotTell = "cannot_tell"
)

// Figure is one figure of a verdict: its value, and what the checker says
// it is (observed, derived, a lower bound, cannot tell; "" when the
// verdict does not say).
type Figure struct {
	Value int64
	Kind  string
}

// Judged is one invariant or assumption of a verdict.
type Judged struct {
	Status   string
	Summary  string
	Evidence []string
	// Refs are the records the evidence cites, where the verdict names
	// them apart from its text.
	Refs []Ref
}

// Ref is a record a verdict's evidence cites: its file (wire, ledger,
// history, faults, exit) and its number (a record's n, or a line).
type Ref struct {
	File string
	N    int64
	Text string // the evidence line that cites it
}

// Verdict is what the comparison reads of a verdict: read from its JSON
// by name, so that it reads the verdicts of the checker as it changes (a
// figure as a number or as an object with its kind, the statuses however
// they are spelled), and holds on to every field it does not know.
type Verdict struct {
	Verdict    string
	Violations []string
	Results    map[string]Judged // assumptions and invariants by id
	Figures    map[string]Figure
	// ClientExit is the bring-your-own client's exit code as the verdict
	// reports it, nil when it reports none.
	ClientExit *int
	raw        map[string]any
}

// ParseVerdict reads a verdict's JSON.
func ParseVerdict(b []byte) (Verdict, error) {
	var raw map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Verdict{}, fmt.Errorf("verdict: %w", err)
	}
	v := Verdict{Results: map[string]Judged{}, Figures: map[string]Figure{}, raw: raw}
	v.Verdict, _ = raw["verdict"].(string)
	for _, x := range asList(raw["violations"]) {
		if s, ok := x.(string); ok {
			v.Violations = append(v.Violations, s)
		}
	}
	for _, list := range []string{"assumptions", "invariants"} {
		for _, x := range asList(raw[list]) {
			m, ok := x.(map[string]any)
			if !ok {
				continue
			}
			id, _ := m["id"].(string)
			j := Judged{Status: normalStatus(fmt.Sprint(m["status"]))}
			j.Summary, _ = m["summary"].(string)
			for _, e := range asList(m["evidence"]) {
				text, refs := evidenceOf(e)
				j.Evidence = append(j.Evidence, text)
				j.Refs = append(j.Refs, refs...)
			}
			v.Results[id] = j
		}
	}
	if figs, ok := raw["figures"].(map[string]any); ok {
		for name, x := range figs {
			if f, ok := figureOf(x); ok {
				v.Figures[name] = f
			}
		}
	}
	// A figure's provenance, where the verdict keeps it apart from the
	// figures: {"provenance": {"events_emitted": {"kind": "lower_bound"}}}.
	if prov, ok := raw["provenance"].(map[string]any); ok {
		for name, x := range prov {
			p, _ := x.(map[string]any)
			kind, _ := p["kind"].(string)
			if f, ok := v.Figures[name]; ok && kind != "" {
				f.Kind = normalStatus(kind)
				v.Figures[name] = f
			}
		}
	}
	v.ClientExit = findExitCode(raw, false)
	return v, nil
}

// evidenceOf reads one evidence line: a plain string, or an object with its
// text and the records it cites.
func evidenceOf(e any) (string, []Ref) {
	m, ok := e.(map[string]any)
	if !ok {
		return fmt.Sprint(e), nil
	}
	text, _ := m["text"].(string)
	var refs []Ref
	for _, x := range asList(m["refs"]) {
		r, _ := x.(map[string]any)
		file, _ := r["file"].(string)
		n, _ := r["n"].(json.Number)
		v, err := n.Int64()
		if file != "" && err == nil {
			refs = append(refs, Ref{File: file, N: v, Text: text})
		}
	}
	return text, refs
}

// LoadVerdict reads an experiment folder's verdict.json.
func LoadVerdict(dir string) (Verdict, error) {
	b, err := os.ReadFile(filepath.Join(dir, "verdict.json"))
	if err != nil {
		return Verdict{}, err
	}
	return ParseVerdict(b)
}

func asList(x any) []any {
	l, _ := x.([]any)
	return l
}

// normalStatus spells a status the comparison's way: "cannot tell",
// "cannot-tell" and "cannot_tell" are one.
func normalStatus(s string) string {
	return strings.NewReplacer(" ", "_", "-", "_").Replace(strings.ToLower(strings.TrimSpace(s)))
}

// figureOf reads a figure written as a number, or as an object with its
// value and its kind under any of the names a verdict may give them.
func figureOf(x any) (Figure, bool) {
	switch f := x.(type) {
	case json.Number:
		n, err := f.Int64()
		return Figure{Value: n}, err == nil
	case map[string]any:
		var fig Figure
		found := false
		for _, k := range []string{"value", "n", "count"} {
			if num, ok := f[k].(json.Number); ok {
				if n, err := num.Int64(); err == nil {
					fig.Value, found = n, true
					break
				}
			}
		}
		for _, k := range []string{"kind", "basis", "provenance", "status", "source"} {
			if s, ok := f[k].(string); ok {
				fig.Kind = normalStatus(s)
				break
			}
		}
		if fig.Kind == "lower" || fig.Kind == "at_least" || fig.Kind == "lowerbound" {
			fig.Kind = FigureLowerBound
		}
		if fig.Kind == FigureCannotTell || fig.Kind == "unknown" {
			return Figure{Kind: FigureCannotTell}, true
		}
		return fig, found
	}
	return Figure{}, false
}

// findExitCode looks through a verdict for the client's exit code: a
// number named like an exit code, or the code of an object named like an
// exit, wherever the verdict puts it.
func findExitCode(x any, underExit bool) *int {
	switch v := x.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			lk := strings.ToLower(k)
			named := strings.Contains(lk, "exit")
			if num, ok := v[k].(json.Number); ok && (named && !strings.Contains(lk, "ms") || underExit && lk == "code") {
				if n, err := num.Int64(); err == nil {
					i := int(n)
					return &i
				}
			}
			if c := findExitCode(v[k], named); c != nil {
				return c
			}
		}
	case []any:
		for _, e := range v {
			if c := findExitCode(e, underExit); c != nil {
				return c
			}
		}
	}
	return nil
}

// refRE finds the records evidence names: "wire record 12", "wire records
// 3, 4", "ledger n=5, n=6", "history line 7".
var (
	wireRefRE    = regexp.MustCompile(`wire records? ((?:\d+(?:, | and )?)+)`)
	ledgerRefRE  = regexp.MustCompile(`ledger ((?:n=\d+(?:, )?)+)`)
	historyRefRE = regexp.MustCompile(`history lines? ((?:\d+(?:, | and )?)+)`)
	numberRE     = regexp.MustCompile(`\d+`)
)

// danglingEvidence returns every record the verdict's evidence names that
// the experiment's files do not hold.
func danglingEvidence(dir string, v Verdict) ([]string, error) {
	wireNs, err := recordNumbers(filepath.Join(dir, "wire.jsonl"))
	if err != nil {
		return nil, err
	}
	ledgerNs, err := recordNumbers(filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		return nil, err
	}
	historyLines, err := countLines(filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []string
	ids := make([]string, 0, len(v.Results))
	for id := range v.Results {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	faultLines, err := countLines(filepath.Join(dir, "faults.jsonl"))
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		for _, r := range v.Results[id].Refs {
			var missing bool
			switch r.File {
			case "wire":
				missing = !wireNs[r.N]
			case "ledger":
				missing = !ledgerNs[r.N]
			case "history":
				missing = r.N < 1 || r.N > historyLines
			case "faults":
				missing = r.N < 1 || r.N > faultLines
			}
			if missing {
				out = append(out, fmt.Sprintf("%s cites %s record %d, which %s.jsonl does not hold: %q", id, r.File, r.N, r.File, r.Text))
			}
		}
		if len(v.Results[id].Refs) > 0 {
			continue // the records are named apart from the text
		}
		for _, e := range v.Results[id].Evidence {
			for _, ref := range refs(wireRefRE, e) {
				if !wireNs[ref] {
					out = append(out, fmt.Sprintf("%s cites wire record %d, which wire.jsonl does not hold: %q", id, ref, e))
				}
			}
			for _, ref := range refs(ledgerRefRE, e) {
				if !ledgerNs[ref] {
					out = append(out, fmt.Sprintf("%s cites ledger n=%d, which ledger.jsonl does not hold: %q", id, ref, e))
				}
			}
			for _, ref := range refs(historyRefRE, e) {
				if ref < 1 || ref > historyLines {
					out = append(out, fmt.Sprintf("%s cites history line %d, and history.jsonl has %d lines: %q", id, ref, historyLines, e))
				}
			}
		}
	}
	return out, nil
}

func refs(re *regexp.Regexp, s string) []int64 {
	var out []int64
	for _, m := range re.FindAllStringSubmatch(s, -1) {
		for _, n := range numberRE.FindAllString(m[1], -1) {
			v, _ := strconv.ParseInt(n, 10, 64)
			out = append(out, v)
		}
	}
	return out
}

// recordNumbers reads the n of every record of a JSON-lines file (absent
// file: none).
func recordNumbers(path string) (map[int64]bool, error) {
	type numbered struct {
		N int64 `json:"n"`
	}
	recs, err := readJSONL[numbered](path)
	if os.IsNotExist(err) {
		return map[int64]bool{}, nil
	}
	if err != nil {
		return nil, err
	}
	ns := make(map[int64]bool, len(recs))
	for _, r := range recs {
		ns[r.N] = true
	}
	return ns, nil
}

func countLines(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	return int64(bytes.Count(b, []byte("\n"))), err
}

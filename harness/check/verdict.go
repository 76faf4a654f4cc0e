package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/chaosrun/chaosrun/targets/byo"
)

// Verdicts.
const (
	Pass         = "pass"
	Fail         = "fail"
	Inconclusive = "inconclusive"
	// WorkloadError is the verdict of a run whose calls the server refused
	// before any fault (an unknown tool, bad arguments): it proves nothing
	// about faults, and no experiment expects it.
	WorkloadError = "workload_error"
)

// Result statuses.
const (
	Held     = "held"
	Violated = "violated"
	// CannotTell is the status of an invariant whose records do not prove
	// it held or violated: the summary says what they do not show (an
	// operation told apart from another only by its arguments, a client
	// known only by the name it gave, events the server may have emitted
	// while nothing carried its stream). It is never counted as held.
	CannotTell = "cannot_tell"
	// NotJudged is the status of an invariant no account held anything
	// for: it is neither held nor violated.
	NotJudged = "not_judged"
)

// The assumption and invariant ids. They are stable: experiment files, JSON
// and JUnit reports use them.
const (
	FaultHit               = "fault_hit"
	NoDuplicateSideEffects = "no_duplicate_side_effects"
	NoSilentEventLoss      = "no_silent_event_loss"
	NoSessionFork          = "no_session_fork"
	NoOrphanedResults      = "no_orphaned_results"
	OutcomesResolved       = "outcomes_resolved"
	// CancelledCommitsSurfaced: a side effect committed after the server
	// saw its call cancelled (2026-07-28: its stream closed while the tool
	// committed) is accounted for by the client: an unknown outcome, or a
	// re-issue deduplicated under the same idempotency key.
	CancelledCommitsSurfaced = "cancelled_commits_surfaced"
	// ClientSurvived: a client of the user's own kept running through the
	// faults: it did not exit with an error, or die by a signal the harness
	// did not send, once a fault was injected. Judged from its exit record.
	ClientSurvived = "client_survived"
)

// InvariantIDs lists the invariants in the order a verdict reports them.
var InvariantIDs = []string{
	NoDuplicateSideEffects, NoSilentEventLoss, NoSessionFork, NoOrphanedResults, OutcomesResolved, CancelledCommitsSurfaced, ClientSurvived,
}

// MaxEvidence bounds the evidence lines of one result; the rest are counted
// in Result.Omitted.
const MaxEvidence = 10

// VerdictFile is the name of the serialised verdict in a result folder.
const VerdictFile = "verdict.json"

// Verdict is the checker's judgement of one run. Its JSON form is
// verdict.json: fields in declaration order, deterministic for a given input.
type Verdict struct {
	// Verdict is pass (the assumption and every invariant held), fail (the
	// assumption held and some invariant was violated) or inconclusive (the
	// assumption did not hold, whatever the invariants say).
	Verdict string `json:"verdict"`
	// Violations lists the ids of the violated invariants, in InvariantIDs
	// order; empty, not absent, when none was.
	Violations []string `json:"violations"`
	// RestsOn lists the invariants the verdict rests on: those proven held
	// or violated, in InvariantIDs order. CannotTell lists those the
	// records could not prove either way; a pass rests on RestsOn alone.
	RestsOn     []string `json:"rests_on"`
	CannotTell  []string `json:"cannot_tell"`
	Assumptions []Result `json:"assumptions"`
	Invariants  []Result `json:"invariants"`
	Figures     Figures  `json:"figures"`
	// Provenance says, for every figure that is not a plain count of
	// recorded facts, what it is: derived, a lower or upper bound, or
	// cannot_tell; a figure it does not name is observed.
	Provenance map[string]Provenance `json:"provenance,omitempty"`
	// ClientExit is how a client of the user's own ended, when the run
	// recorded it (client-exit.json).
	ClientExit *ClientExit `json:"client_exit,omitempty"`
}

// ClientExit is how a client of the user's own ended: its exit code and
// status, when (on the run's clock), and its last lines of output.
type ClientExit = byo.ClientExit

// Result is the outcome of one assumption or invariant.
type Result struct {
	ID      string `json:"id"`
	Status  string `json:"status"` // held | violated | cannot_tell | not_judged
	Summary string `json:"summary"`
	// Account says which account judged an invariant (ledger, wire or
	// both); empty for an assumption and for an invariant not judged.
	Account string `json:"account,omitempty"`
	// Disagreement is what the wire's account said of an invariant both
	// accounts judged, when it differs from the ledger's.
	Disagreement string `json:"disagreement,omitempty"`
	// Unseen is why the wire's account differs from the ledger's on an
	// invariant where the ledger holds what the wire cannot carry (a
	// session the server expired while no client asked about it): a limit
	// of the wire, told, not a disagreement.
	Unseen string `json:"unseen,omitempty"`
	// Evidence is what proves the status, at most MaxEvidence lines, each
	// with the records it names.
	Evidence []Evidence `json:"evidence,omitempty"`
	Omitted  int        `json:"omitted,omitempty"` // evidence lines left off
}

// Evidence is one line of evidence: its text, such as "ledger n=12: ..."
// or "history line 34: ...", and the records it names, so a reader (the
// timeline) links them without reading the text.
type Evidence struct {
	Text string `json:"text"`
	Refs []Ref  `json:"refs,omitempty"`
}

// The record files a [Ref] names.
const (
	RefWire    = "wire"    // wire.jsonl, by record n
	RefLedger  = "ledger"  // ledger.jsonl, by record n
	RefHistory = "history" // history.jsonl, by line
	RefFaults  = "faults"  // faults.jsonl, by line
	RefExit    = "exit"    // client-exit.json (N is 0)
)

// Ref names one record. Derived marks a record a fact was derived from, by
// a stated rule, rather than one that shows it.
type Ref struct {
	File    string `json:"file"`
	N       int64  `json:"n"`
	Derived bool   `json:"derived,omitempty"`
}

// UnmarshalJSON reads an evidence line, or a plain string as verdicts saved
// before evidence carried its records.
func (e *Evidence) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &e.Text)
	}
	type plain Evidence
	return json.Unmarshal(b, (*plain)(e))
}

// String is the evidence's text.
func (e Evidence) String() string { return e.Text }

// Held reports whether the result held.
func (r Result) Held() bool { return r.Status == Held }

// Result returns the invariant or assumption with the given id.
func (v Verdict) Result(id string) (Result, bool) {
	for _, r := range append(append([]Result(nil), v.Assumptions...), v.Invariants...) {
		if r.ID == id {
			return r, true
		}
	}
	return Result{}, false
}

// WriteJSON writes v as indented JSON with a final newline.
func (v Verdict) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("verdict: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("verdict: %w", err)
	}
	return nil
}

// SaveVerdict writes v to path (verdict.json).
func SaveVerdict(path string, v Verdict) error {
	var buf bytes.Buffer
	if err := v.WriteJSON(&buf); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("verdict: %w", err)
	}
	return nil
}

// LoadVerdict reads a verdict.json. Unknown fields are errors.
func LoadVerdict(path string) (Verdict, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Verdict{}, fmt.Errorf("verdict: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v Verdict
	if err := dec.Decode(&v); err != nil {
		return Verdict{}, fmt.Errorf("verdict %s: %w", path, err)
	}
	return v, nil
}

// evidence collects at most MaxEvidence lines and counts the rest.
type evidence struct {
	lines   []Evidence
	omitted int
}

// add formats one line. The records it names are those of its citation
// arguments ([Accounts.refs], [historyLines.many], fault descriptions),
// which print as their text.
func (e *evidence) add(format string, args ...any) {
	if len(e.lines) >= MaxEvidence {
		e.omitted++
		return
	}
	line := Evidence{Text: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if c, ok := a.(citation); ok {
			line.Refs = append(line.Refs, c.refs...)
		}
	}
	e.lines = append(e.lines, line)
}

// citation is text that names records, and the records it names.
type citation struct {
	text string
	refs []Ref
}

func (c citation) String() string { return c.text }

func (e *evidence) result(id string, held bool, summary string) Result {
	status := Violated
	if held {
		status = Held
	}
	return Result{ID: id, Status: status, Summary: summary, Evidence: e.lines, Omitted: e.omitted}
}

// cannotTell is a result whose records prove neither: why says what they
// do not show.
func (e *evidence) cannotTell(id, why string) Result {
	return Result{ID: id, Status: CannotTell, Summary: why, Evidence: e.lines, Omitted: e.omitted}
}

// seconds renders microseconds on the run's clock as seconds, the unit a
// person reads a timeline in.
func seconds(us int64) string { return fmt.Sprintf("%.3fs", float64(us)/1e6) }

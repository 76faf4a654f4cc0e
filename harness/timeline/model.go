package timeline

import (
	"cmp"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/wire"
)

// Experiment is what one timeline is drawn from: an experiment's records,
// the verdict judged on them, and what the runner knows of it.
type Experiment struct {
	Name        string
	Description string
	Expected    string   // the expected verdict, empty if unknown
	Met         bool     // whether the verdict met the expectation
	Reasons     []string // why it did not
	// Partial says why the records are incomplete (an interrupted run);
	// empty when they are whole.
	Partial string
	// Input holds the records, wire.jsonl among them when the run has one.
	Input   check.Input
	Verdict check.Verdict

	_ struct{} // keyed literals only: the input grows
}

// Load reads an experiment's result folder as check.LoadRun does and judges
// it; the caller fills in what the runner knows (expectation, partial).
func Load(dir string) (Experiment, error) {
	in, err := check.LoadRun(dir)
	if err != nil {
		return Experiment{}, fmt.Errorf("timeline: %w", err)
	}
	return Experiment{Name: filepath.Base(dir), Input: in, Verdict: check.Judge(in)}, nil
}

// The record files a mark refers to, as the page numbers them.
const (
	fileHistory = iota
	fileLedger
	fileFaults
	fileWire
)

// fileNames are the files by their numbers.
var fileNames = []string{check.HistoryFile, check.LedgerFile, check.FaultsFile, wire.File}

// ref names one record: its file and its line (the ledger's and the wire's
// n, which number their records from 1 as the lines of a whole file do).
type ref [2]int64

// Row kinds of a lane.
const (
	rowCalls   = "calls"
	rowSession = "session"
	rowWire    = "wire"
)

// page is the data a timeline page draws, as its script reads it.
type page struct {
	Name        string        `json:"name"`
	Description string        `json:"description,omitempty"`
	Expected    string        `json:"expected,omitempty"`
	Met         bool          `json:"met"`
	Reasons     []string      `json:"reasons,omitempty"`
	Partial     string        `json:"partial,omitempty"`
	Verdict     string        `json:"verdict"`
	Results     []result      `json:"results"`
	Figures     check.Figures `json:"figures"`
	EndUS       int64         `json:"end_us"`
	Lanes       []*lane       `json:"lanes"`
	Faults      []fault       `json:"faults"`
	Marks       []mark        `json:"marks"`
	Files       []string      `json:"files"`
	// Records holds every record of each file as its JSON line; the page
	// keeps them apart from the data, as text it reads only when a record is
	// shown. Lines are their numbers where they are not their positions
	// (ledger, wire).
	Records [][]string `json:"-"`
	Lines   [][]int64  `json:"lines"`
	HasWire bool       `json:"has_wire"`
}

// result is an assumption or invariant with its evidence linked to records.
type result struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Summary string `json:"summary"`
	// Account is the account that judged it (ledger, wire, both, history);
	// Disagreement what the wire's said when it differs from the ledger's.
	Account      string     `json:"account,omitempty"`
	Disagreement string     `json:"disagreement,omitempty"`
	Evidence     []evidence `json:"evidence,omitempty"`
	Omitted      int        `json:"omitted,omitempty"`
}

type evidence struct {
	Text string `json:"text"`
	Refs []ref  `json:"refs,omitempty"`
}

// lane is one logical client and its rows.
type lane struct {
	Client string `json:"client"`
	Rows   []row  `json:"rows"`
	rowOf  map[string]int
}

// row is a horizontal band of a lane: the client's calls, one session it
// held (with the session's life on the server), or the wire.
type row struct {
	Kind    string `json:"kind"`
	Session string `json:"session,omitempty"`
	From    int64  `json:"from,omitempty"`
	To      int64  `json:"to,omitempty"`
	// State is "unclaimed" for a session the client never learned of.
	State string `json:"state,omitempty"`
	Refs  []ref  `json:"refs,omitempty"`
}

// fault is one injection's window.
type fault struct {
	Kind   string `json:"kind"`
	Target string `json:"target"`
	From   int64  `json:"from"`
	To     int64  `json:"to"` // the end of the page when it never healed
	Label  string `json:"label"`
	Error  string `json:"error,omitempty"`
	Refs   []ref  `json:"refs"`
}

// mark is one thing drawn in a row: a point (End 0) or a range.
type mark struct {
	Kind  string `json:"k"`
	Lane  int    `json:"c"`
	Row   int    `json:"r"`
	T     int64  `json:"t"`
	End   int64  `json:"e,omitempty"`
	State string `json:"s,omitempty"`
	Label string `json:"l,omitempty"`
	Refs  []ref  `json:"f,omitempty"`
	lane  *lane
}

// maxRangeRefs bounds the records one range mark names (a silent loss of
// thousands of events).
const maxRangeRefs = 50

// build turns an experiment into the page's data.
//
// The accounts are the checker's (check.Prepare): the ledger's, and the one
// it derives from the wire's server edge. Sessions, calls, losses and
// forks are drawn from the ledger's, or from the wire's for a run whose
// server keeps no ledger; the wire's side effects, with its duplicates and
// orphans, are drawn in each client's wire row beside the raw wire records.
func build(x Experiment) *page {
	in := &x.Input
	p := &page{
		Name: x.Name, Description: strings.TrimSpace(x.Description), Expected: x.Expected, Met: x.Met,
		Reasons: x.Reasons, Partial: x.Partial, Verdict: x.Verdict.Verdict, Figures: x.Verdict.Figures,
		Files: fileNames, HasWire: len(in.Wire) > 0,
		Faults: []fault{}, Marks: []mark{}, // the script reads empty lists, not null
	}
	j := check.Prepare(*in)
	if !j.Own && len(in.Wire) > 0 {
		// A client of the user's own writes no history: draw the one the
		// checker judged, derived from the wire's client edge.
		in.History = j.History
		p.Files = slices.Clone(fileNames)
		p.Files[fileHistory] = "history derived from " + wire.File
	}
	p.records(x)
	p.EndUS = endOf(x)
	b := &builder{p: p, lanes: map[string]*lane{}, sessionClient: map[string]string{}}
	primary := side{recs: in.Ledger, acc: j.Ledger, file: fileLedger}
	var fromWire *side
	if j.Wire != nil {
		fromWire = &side{recs: j.WireRecords, acc: *j.Wire, file: fileWire, wireRow: true}
		if len(in.Ledger) == 0 {
			primary, fromWire = *fromWire, nil
			primary.wireRow = false
		}
	}
	b.sessions(&primary, in.History)
	b.calls(&primary.acc)
	b.history(in.History, &primary.acc)
	b.sideEffects(&primary)
	b.losses(&primary, in.History)
	b.forks(&primary)
	if fromWire != nil {
		b.sideEffects(fromWire)
	}
	b.wire(in.Wire)
	b.faults(in.Faults)
	p.Lanes = b.ordered()
	p.Results = linkResults(x.Verdict)
	return p
}

func (p *page) records(x Experiment) {
	p.Records = make([][]string, len(fileNames))
	p.Lines = make([][]int64, len(fileNames))
	p.Records[fileHistory] = rawLines(x.Input.History)
	p.Records[fileFaults] = rawLines(x.Input.Faults)
	p.Records[fileLedger] = rawLines(x.Input.Ledger)
	for _, r := range x.Input.Ledger {
		p.Lines[fileLedger] = append(p.Lines[fileLedger], r.N)
	}
	p.Records[fileWire] = rawLines(x.Input.Wire)
	for _, r := range x.Input.Wire {
		p.Lines[fileWire] = append(p.Lines[fileWire], r.N)
	}
}

func rawLines[T any](recs []T) []string {
	out := make([]string, len(recs))
	for i := range recs {
		b, _ := json.Marshal(&recs[i]) // records of plain fields always marshal
		out[i] = string(b)
	}
	return out
}

// endOf is the last moment any record names.
func endOf(x Experiment) int64 {
	var end int64
	for _, h := range x.Input.History {
		end = max(end, h.TUS)
	}
	for _, r := range x.Input.Ledger {
		end = max(end, r.TUS)
	}
	for _, f := range x.Input.Faults {
		end = max(end, f.StartUS, f.EndUS)
	}
	for _, w := range x.Input.Wire {
		end = max(end, w.TUS)
	}
	return max(end, 1)
}

// builder places records into lanes and rows.
type builder struct {
	p             *page
	lanes         map[string]*lane
	sessionClient map[string]string // session id to the client that held it
}

// unattributed names the lane of records no client can be found for.
const unattributed = "(no client)"

func (b *builder) lane(client string) *lane {
	if client == "" {
		client = unattributed
	}
	l := b.lanes[client]
	if l == nil {
		l = &lane{Client: client, Rows: []row{{Kind: rowCalls}}, rowOf: map[string]int{}}
		b.lanes[client] = l
	}
	return l
}

// sessionRow returns the row of session in client's lane, adding it.
func (b *builder) sessionRow(l *lane, session string) int {
	if i, ok := l.rowOf[session]; ok {
		return i
	}
	l.Rows = append(l.Rows, row{Kind: rowSession, Session: session})
	l.rowOf[session] = len(l.Rows) - 1
	return len(l.Rows) - 1
}

// place finds the lane and row of a record of client in session: the
// session's own row, or the calls row for a record of no session.
func (b *builder) place(client, session string) (*lane, int) {
	if client == "" {
		client = b.sessionClient[session]
	}
	l := b.lane(client)
	if session == "" {
		return l, 0
	}
	return l, b.sessionRow(l, session)
}

// add places m in row of lane l; its lane number is set once the lanes
// are ordered.
func (b *builder) add(l *lane, row int, m mark) {
	m.Row, m.lane = row, l
	b.p.Marks = append(b.p.Marks, m)
}

// ordered sorts the lanes by client (c2 before c10), the unattributed
// lane last, and numbers the marks' lanes.
func (b *builder) ordered() []*lane {
	out := make([]*lane, 0, len(b.lanes))
	for _, l := range b.lanes {
		out = append(out, l)
	}
	slices.SortFunc(out, func(x, y *lane) int {
		return cmp.Or(cmp.Compare(boolInt(x.Client == unattributed), boolInt(y.Client == unattributed)), naturalCompare(x.Client, y.Client))
	})
	index := make(map[*lane]int, len(out))
	for i, l := range out {
		index[l] = i
	}
	for i := range b.p.Marks {
		b.p.Marks[i].Lane = index[b.p.Marks[i].lane]
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// naturalCompare orders strings with their digit runs compared as numbers.
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, _ := strconv.ParseUint(a[:da], 10, 64)
			nb, _ := strconv.ParseUint(b[:db], 10, 64)
			if c := cmp.Compare(na, nb); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		if c := cmp.Compare(a[0], b[0]); c != 0 {
			return c
		}
		a, b = a[1:], b[1:]
	}
	return cmp.Compare(len(a), len(b))
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && n < 18 && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

package timeline

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// doubleCharge is a saved run of experiments/double-charge-lb-idle.yaml.
const doubleCharge = "testdata/double-charge-lb-idle"

func loadDoubleCharge(t *testing.T) Experiment {
	t.Helper()
	x, err := Load(doubleCharge)
	require.NoError(t, err)
	return x
}

// TestPageDataMatchesGolden pins what the page is given to draw for the
// double-charge incident: lanes, rows, marks and their records. Run with
// -update after a deliberate change.
func TestPageDataMatchesGolden(t *testing.T) {
	got, err := json.MarshalIndent(build(loadDoubleCharge(t)), "", " ")
	require.NoError(t, err)
	golden := filepath.Join("testdata", "double-charge-lb-idle.page.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
}

func marksOf(p *page, kind string) []mark {
	var out []mark
	for _, m := range p.Marks {
		if m.Kind == kind {
			out = append(out, m)
		}
	}
	return out
}

func TestDoubleChargeMarksComeFromTheAccount(t *testing.T) {
	x := loadDoubleCharge(t)
	p := build(x)
	require.Len(t, p.Lanes, 1)
	l := p.Lanes[0]
	assert.Equal(t, "c1", l.Client)
	require.Len(t, l.Rows, 3, "a calls row and a row for each of the two sessions")

	charges := marksOf(p, kindCharge)
	require.Len(t, charges, 2)
	assert.Equal(t, "original", charges[0].State, "the first charge of the order charged twice is drawn as the original")
	assert.Equal(t, "dup", charges[1].State, "the second as the duplicate")
	assert.Equal(t, []ref{{fileLedger, 8}}, charges[1].Refs)
	assert.Equal(t, "184f76a1b56e355bc9f05107b6520fe3", l.Rows[charges[1].Row].Session, "the retry's charge is in the second session")

	results := marksOf(p, kindResult)
	require.Len(t, results, 2)
	assert.Equal(t, "orphan", results[0].State)
	assert.Equal(t, []ref{{fileLedger, 6}}, results[0].Refs)
	assert.Equal(t, int64(4670139), results[0].T)
	assert.Equal(t, "d60fc922f0c386e20ad915f1060ca678", l.Rows[results[0].Row].Session, "the original call's result lands in the abandoned session")

	require.Len(t, marksOf(p, kindFork), 1)
	require.Len(t, p.Faults, 1)
	assert.Equal(t, fault{Kind: "idle_timeout", Target: "mcp", From: 109179, To: 6233234, Label: "fault 0: idle_timeout on mcp",
		Refs: []ref{{fileFaults, 1}}}, p.Faults[0])

	calls := marksOf(p, kindCall)
	require.Len(t, calls, 1)
	assert.Equal(t, "fail", calls[0].State)
}

// TestEvidenceIsLinkedToTheRecordsItNames: each evidence line links the
// records the checker cites for it, read from the verdict, not its text.
func TestEvidenceIsLinkedToTheRecordsItNames(t *testing.T) {
	x := loadDoubleCharge(t)
	for _, name := range []string{"ledger and wire", "wire alone"} {
		t.Run(name, func(t *testing.T) {
			in := x.Input
			if name == "wire alone" {
				in.Ledger = nil
			}
			v := check.Judge(in)
			linked := linkResults(v)
			var all []check.Result
			all = append(append(all, v.Assumptions...), v.Invariants...)
			require.Len(t, linked, len(all))
			cited := 0
			for i, r := range all {
				require.Len(t, linked[i].Evidence, len(r.Evidence))
				for j, e := range r.Evidence {
					var want []ref
					for _, c := range e.Refs {
						if c.File != check.RefExit {
							want = append(want, ref{refFiles[c.File], c.N})
						}
					}
					assert.Equal(t, want, linked[i].Evidence[j].Refs, e.Text)
					cited += len(want)
				}
			}
			assert.NotZero(t, cited)
			hit := linked[1]
			require.Equal(t, check.FaultHit, hit.ID)
			assert.Contains(t, hit.Evidence[0].Refs, ref{fileFaults, 1}, "the fault that hit, by its line of faults.jsonl")
		})
	}
}

// TestPageIsSelfContained: the page opens from a file with no network, so it
// names no address, loads no script or style, and carries its data inline.
func TestPageIsSelfContained(t *testing.T) {
	var b bytes.Buffer
	require.NoError(t, Write(&b, loadDoubleCharge(t)))
	page := b.String()
	assert.NotContains(t, page, "http://")
	assert.NotContains(t, page, "https://")
	assert.NotRegexp(t, regexp.MustCompile(`\ssrc=|<link\b|@import|url\(`), page)
	assert.Contains(t, page, `<script type="application/json" id="data">{"name":"double-charge-lb-idle"`)
	m := regexp.MustCompile(`<script type="text/plain" id="records-1">([A-Za-z0-9+/=]+)</script>`).FindStringSubmatch(page)
	require.NotNil(t, m, "the ledger's lines, inline")
	z, err := base64.StdEncoding.DecodeString(m[1])
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(z))
	require.NoError(t, err)
	ledger, err := io.ReadAll(zr)
	require.NoError(t, err)
	assert.Equal(t, 12, strings.Count(string(ledger), `"source":"reference"`), "every ledger record")
	assert.Equal(t, 1, strings.Count(page, "<script>"), "one script, inline")

	var idx bytes.Buffer
	v := check.Judge(loadDoubleCharge(t).Input)
	require.NoError(t, WriteIndex(&idx, Index{ID: "r1", Runtime: "local", Experiments: []Entry{
		{Name: "double-charge-lb-idle", Expected: "fail", Met: true, Verdict: &v, Timeline: "double-charge-lb-idle/timeline.html"},
		{Name: "broken", Expected: "pass", Error: "server did not start"},
	}}))
	assert.NotContains(t, idx.String(), "http")
	assert.Contains(t, idx.String(), `<a href="double-charge-lb-idle/timeline.html">double-charge-lb-idle</a>`)
	assert.Contains(t, idx.String(), "harness error: server did not start")
	assert.Contains(t, idx.String(), `class="tally some-unmet"`)
}

// TestAnIndexOfMetExpectationsIsNoWallOfRed: incident experiments expect
// fail; when every expectation is met the page says so first, and draws
// no verdict as an alarm.
func TestAnIndexOfMetExpectationsIsNoWallOfRed(t *testing.T) {
	v := check.Judge(loadDoubleCharge(t).Input)
	require.Equal(t, check.Fail, v.Verdict)
	var idx bytes.Buffer
	require.NoError(t, WriteIndex(&idx, Index{ID: "r1", Runtime: "local", Experiments: []Entry{
		{Name: "double-charge-lb-idle", Expected: "fail", Met: true, Verdict: &v},
		{Name: "double-charge-lb-idle-again", Expected: "fail", Met: true, Verdict: &v},
	}}))
	page := idx.String()
	assert.Contains(t, page, `class="tally all-met"`)
	assert.Contains(t, page, "Every expectation met: 2 of 2")
	assert.Equal(t, 2, strings.Count(page, `class="met-tag yes"`))
	assert.NotContains(t, page, `class="met-tag no"`)
	assert.NotContains(t, page, `class="verdict v-fail"`, "a fail that was expected is not drawn as an alarm")
	assert.Less(t, strings.Index(page, `class="met-tag`), strings.Index(page, `class="verdict-o`), "whether it was met comes before what the verdict was")
}

// TestWireSideEffectsAreDrawn: a server that keeps no ledger is judged from
// the wire, and the page draws the charges the checker derives from it in
// the sessions' rows, the duplicate in red, with the wire records they came
// from; beside a ledger, they are drawn in the client's wire row.
func TestWireSideEffectsAreDrawn(t *testing.T) {
	hist := []history.Record{
		{TUS: 10, Client: "c1", Kind: history.KindSessionNew, Session: "s1"},
		{TUS: 20, Client: "c1", Kind: history.KindInvoke, Call: "c1-1", OrderID: "c1-1", Tool: "charge", Session: "s1", RequestID: "2", Attempt: 1},
		{TUS: 60, Client: "c1", Kind: history.KindInvoke, Call: "c1-1", OrderID: "c1-1", Tool: "charge", Session: "s1", RequestID: "3", Attempt: 2},
	}
	ledger := []sideeffects.Record{{ID: "a", N: 1, TUS: 30, Kind: sideeffects.KindCharge, Session: "s1", Client: "c1", OrderID: "c1-1", AmountCents: 5}}
	tests := []struct {
		name   string
		ledger []sideeffects.Record
		row    string
	}{
		{"wire alone", nil, rowSession},
		{"beside a ledger", ledger, rowWire},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := Experiment{Name: "wire", Input: check.Input{History: hist, Ledger: tc.ledger, Wire: wireCharges()}}
			x.Verdict = check.Judge(x.Input)
			p := build(x)
			require.True(t, p.HasWire)
			states := map[string]int{}
			for _, m := range marksOf(p, kindCharge) {
				if m.Refs[0][0] != fileWire {
					continue
				}
				assert.Equal(t, tc.row, p.Lanes[m.Lane].Rows[m.Row].Kind)
				states[m.State]++
			}
			assert.Equal(t, map[string]int{"original": 1, "dup": 1}, states, "the order invoked twice at the server: the original, then the duplicate")
			assert.NotEmpty(t, marksOf(p, kindWireRequest))
			assert.NotEmpty(t, marksOf(p, kindWireClose))
		})
	}
}

// wireCharges is a server edge where c1 initializes and calls charge for one
// order twice.
func wireCharges() []wire.Record {
	args := json.RawMessage(`{"order_id":"c1-1","amount_cents":5}`)
	call := func(n, t int64, conn int64, id string) []wire.Record {
		return []wire.Record{
			{N: n, TUS: t, Edge: wire.EdgeServer, Conn: conn, Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp",
				Header:   &wire.Header{SessionID: "s1"},
				Messages: []wire.Message{{ID: id, Method: "tools/call", Tool: "charge", Args: args, ArgsDigest: "d1"}}},
			{N: n + 1, TUS: t + 1, Edge: wire.EdgeServer, Conn: conn, Kind: wire.KindResponse, Exchange: 1, Status: 200,
				Header: &wire.Header{SessionID: "s1", ContentType: "text/event-stream"}},
		}
	}
	recs := []wire.Record{
		{N: 1, TUS: 5, Edge: wire.EdgeServer, Conn: 1, Kind: wire.KindRequest, Exchange: 1, Method: "POST", Path: "/mcp",
			Messages: []wire.Message{{ID: "1", Method: "initialize", ClientName: "c1", Protocol: "2025-11-25"}}},
		{N: 2, TUS: 8, Edge: wire.EdgeServer, Conn: 1, Kind: wire.KindResponse, Exchange: 1, Status: 200,
			Header: &wire.Header{SessionID: "s1"}, Messages: []wire.Message{{ID: "1", Response: true, Protocol: "2025-11-25"}}},
	}
	recs = append(recs, call(3, 20, 2, "2")...)
	recs = append(recs, wire.Record{N: 5, TUS: 40, Edge: wire.EdgeServer, Conn: 2, Kind: wire.KindClose, End: wire.EndRST, By: wire.SideClient})
	return append(recs, call(6, 60, 3, "3")...)
}

// TestAClientWithoutHistoryIsDrawnFromTheWire: a client of the user's own
// writes no history; its lane shows the calls the checker derived from the
// wire's client edge, and the record view names where they came from.
func TestAClientWithoutHistoryIsDrawnFromTheWire(t *testing.T) {
	x, err := Load("testdata/byo-client-retries-blindly")
	require.NoError(t, err)
	require.Empty(t, x.Input.History, "the saved run has no history.jsonl")
	x.Verdict = check.Judge(x.Input)
	p := build(x)
	calls := marksOf(p, kindCall)
	require.Len(t, calls, 1, "one logical call, place_order for order-c1-1")
	assert.Equal(t, "c1", p.Lanes[calls[0].Lane].Client)
	assert.NotEmpty(t, marksOf(p, kindRetry), "its second invocation on a fresh session")
	assert.Len(t, marksOf(p, kindSessionNew), 2)
	assert.Equal(t, "history derived from "+wire.File, p.Files[fileHistory])
	assert.Equal(t, fileNames[fileHistory], check.HistoryFile, "the shared list is left alone")
	assert.NotEmpty(t, p.Records[fileHistory], "the derived records are there to be shown")
}

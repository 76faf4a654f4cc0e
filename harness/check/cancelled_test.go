package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/targets/history"
)

func (r *run) cancelledCall(client, req, order string) *run {
	return r.led(sideeffects.Record{Kind: sideeffects.KindCallCancelled, Client: client, RequestID: req, OrderID: order, Reason: "commit_then_notice"})
}

// statelessCut is a 2026-07-28 charge whose stream a reset closes at 30s:
// the server sees it cancelled and the tool commits as it notices. After
// that, the client either issues it again (reissue: "", or "key" under an
// idempotency key the server deduplicates) or reports it unknown.
func statelessCut(after string) Input {
	r := newRun().fault("reset", "proxy", 30, 30)
	r.at(0).clientStart("c1", "fresh")
	r.at(0.1).invoke("c1", "pay-1", "charge", "", "c1-2", 1).started("", "c1", "c1-2", "charge", "pay-1")
	r.at(30).broke("c1", "pay-1", "", "c1-2", "reset").cancelledCall("c1", "c1-2", "pay-1").charged("", "c1", "c1-2", "pay-1")
	switch after {
	case "unknown":
		r.at(30.1).outcome(history.KindUnknown, "c1", "pay-1", "", "c1-2", 0)
	case "key":
		r.at(31).invoke("c1", "pay-1", "charge", "", "c1-3", 2).started("", "c1", "c1-3", "charge", "pay-1")
		r.at(121).led(sideeffects.Record{Kind: sideeffects.KindChargeDeduplicated, Client: "c1", RequestID: "c1-3", OrderID: "pay-1", IdempotencyKey: "k"})
		r.written("", "c1-3", 0).outcome(history.KindOK, "c1", "pay-1", "", "c1-3", 0)
	default:
		r.at(31).invoke("c1", "pay-1", "charge", "", "c1-3", 2).started("", "c1", "c1-3", "charge", "pay-1")
		r.at(121).charged("", "c1", "c1-3", "pay-1").written("", "c1-3", 0).outcome(history.KindOK, "c1", "pay-1", "", "c1-3", 0)
	}
	return r.in
}

func TestCancelledCommitsSurfaced(t *testing.T) {
	tests := []struct {
		after      string
		status     string
		surfaced   string
		unsurfaced int64
	}{
		{"reissue", Violated, "", 1},
		{"unknown", Held, "unknown", 0},
		{"key", Held, "deduplicated", 0},
	}
	for _, tc := range tests {
		t.Run(tc.after, func(t *testing.T) {
			in := statelessCut(tc.after)
			acc := Account(in.Ledger, in.History, nil)
			require.Len(t, acc.CancelledCommits, 1)
			c := acc.CancelledCommits[0]
			assert.Equal(t, StreamKey{RequestID: "c1-2"}, c.StreamKey)
			assert.Equal(t, "pay-1", c.OrderID)
			assert.Less(t, c.Cancelled, c.Commit)
			assert.Equal(t, tc.surfaced, c.Surfaced)

			v := Judge(in)
			var res Result
			for _, r := range v.Invariants {
				if r.ID == CancelledCommitsSurfaced {
					res = r
				}
			}
			assert.Equal(t, tc.status, res.Status, res.Summary)
			assert.Equal(t, int64(1), v.Figures.CancelledCommits)
			assert.Equal(t, tc.unsurfaced, v.Figures.CancelledUnsurfaced)
			if tc.status == Violated {
				require.NotEmpty(t, res.Evidence)
				assert.Contains(t, res.Evidence[0].Text, "ledger n=2, n=3: order pay-1 committed after the server saw request c1-2 (no session) cancelled; c1 reported the call ok at history line 5")
			}
		})
	}
	t.Run("a commit before the cancellation is none", func(t *testing.T) {
		r := newRun()
		r.at(0).invoke("c1", "pay-1", "charge", "", "c1-2", 1).started("", "c1", "c1-2", "charge", "pay-1")
		r.at(1).charged("", "c1", "c1-2", "pay-1").cancelledCall("c1", "c1-2", "pay-1")
		assert.Empty(t, Account(r.in.Ledger, r.in.History, nil).CancelledCommits)
	})
}

func TestTaskFigures(t *testing.T) {
	r := newRun()
	r.at(0).invoke("c1", "pay-1", "charge", "", "c1-2", 1)
	r.led(sideeffects.Record{Kind: sideeffects.KindCallStarted, Client: "c1", RequestID: "c1-2", Tool: "charge", OrderID: "pay-1", Stream: "task:a"})
	r.led(sideeffects.Record{Kind: sideeffects.KindCallStarted, Client: "c1", RequestID: "c1-3", Tool: "charge", OrderID: "pay-2", Stream: "task:b"})
	r.at(1).led(sideeffects.Record{Kind: sideeffects.KindResultWritten, Client: "c1", RequestID: "c1-2", Stream: "task:a"})
	r.at(2).led(sideeffects.Record{Kind: sideeffects.KindResultWritten, Client: "c1", RequestID: "c1-2", Stream: "task:a"})
	f := Judge(r.in).Figures
	assert.Equal(t, int64(2), f.Tasks)
	assert.Equal(t, int64(2), f.TaskResultsFetched, "task a fetched twice, task b never")
}

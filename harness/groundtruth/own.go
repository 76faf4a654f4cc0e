package groundtruth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// chaosrun's own programs keep their own accounts: its clients a history
// (history.jsonl) and its servers, and the example server of the
// bring-your-own contract, a ledger (ledger.jsonl). The test reads them
// with the decoders below, its own, and the verdict it checks is judged
// without them (from the wire alone), so they are a witness the verdict
// never read.

// historyLine is the part of a history record the oracle reads.
type historyLine struct {
	Client    string `json:"client"`
	Kind      string `json:"kind"`
	Call      string `json:"call"`
	OrderID   string `json:"order_id"`
	Tool      string `json:"tool"`
	Session   string `json:"session"`
	RequestID string `json:"request_id"`
	Attempt   int    `json:"attempt"`
	EventID   int64  `json:"event_id"`
	Reason    string `json:"reason"`
	Result    string `json:"result"`
	Detail    string `json:"detail"`
}

// ownClient reads a chaosrun client's history. key gives the workload's key
// value of each of its calls (by call id), idempotent whether it is.
func ownClient(dir, target string, key func(call string) string, idempotent func(call string) bool) (ClientRecord, error) {
	lines, err := readJSONL[historyLine](filepath.Join(dir, "history.jsonl"))
	if err != nil {
		return ClientRecord{}, err
	}
	rec := ClientRecord{Program: target, Gapped: Exactly(0, "no gap in its history")}
	calls := map[string]*Call{}
	var order []string
	live := map[string]map[string]bool{} // client to the sessions it opened that the server still holds
	var sessions, forks, received int64
	breaks := map[string]string{} // call to its first stream break
	delivered := map[string]bool{}
	for i, h := range lines {
		ev := fmt.Sprintf("history line %d", i+1)
		switch h.Kind {
		case "session_new":
			sessions++
			if len(live[h.Client]) > 0 {
				forks++
			}
			if live[h.Client] == nil {
				live[h.Client] = map[string]bool{}
			}
			live[h.Client][h.Session] = true
		case "session_lost":
			if h.Reason != "abandoned" { // abandoned: dropped by the client, held by the server
				delete(live[h.Client], h.Session)
			}
		case "invoke":
			c := calls[h.Call]
			if c == nil {
				c = &Call{Client: h.Client, ID: h.Call, Tool: h.Tool, Key: key(h.Call), Idempotent: idempotent(h.Call), Evidence: ev}
				calls[h.Call] = c
				order = append(order, h.Call)
			}
			c.Attempts++
			c.Requests = append(c.Requests, requestName(h.Session, h.Client, h.RequestID))
		case "event":
			// Progress notifications only (not a priming event, not a log
			// message), each event once however often it was delivered.
			id := fmt.Sprintf("%s\x00%s\x00%d", h.Session, h.RequestID, h.EventID)
			if h.Detail != "notifications/progress" || h.EventID > 0 && delivered[id] {
				continue
			}
			delivered[id] = true
			received++
			if c := calls[h.Call]; c != nil {
				c.Received++
			}
		case "stream_break":
			if _, seen := breaks[h.Call]; !seen {
				breaks[h.Call] = fmt.Sprintf("%s: stream_break %s", ev, h.Reason)
			}
		case "gap":
			rec.Gapped = Unknown("its history surfaces a gap, whose events the test does not count")
		case "ok", "fail", "unknown":
			if _, seen := breaks[h.Call]; !seen && h.Kind == "fail" && strings.HasPrefix(h.Reason, "status_5") {
				// A 5xx in the answer's place (an SDK client records it as
				// the call's failure, not as a break): the fault broke it.
				breaks[h.Call] = fmt.Sprintf("%s: failed on %s", ev, h.Reason)
			}
			if c := calls[h.Call]; c != nil {
				c.Outcome = map[string]string{"ok": OutcomeOK, "fail": OutcomeFailed, "unknown": OutcomeUnknown}[h.Kind]
				c.ResultRead = h.Kind == "ok" || h.Kind == "fail" && h.Result == "read"
				c.Evidence = ev
			}
		}
	}
	for _, id := range order {
		c := calls[id]
		c.Hit = breaks[id]
		rec.Calls = append(rec.Calls, *c)
	}
	rec.CallsMade = Exactly(int64(len(rec.Calls)), "invoke records in its history")
	rec.Received = Exactly(received, "progress events in its history, each event id once")
	rec.Sessions = Exactly(sessions, "session_new records in its history")
	rec.Forks = Exactly(forks, "session_new records while a session it opened was still held by the server (not lost by 404 or a close event)")
	return rec, nil
}

// ledgerLine is the part of a ledger record the oracle reads.
type ledgerLine struct {
	N         int64  `json:"n"`
	Kind      string `json:"kind"`
	Session   string `json:"session"`
	Client    string `json:"client"`
	RequestID string `json:"request_id"`
	Tool      string `json:"tool"`
	OrderID   string `json:"order_id"`
	IsError   bool   `json:"is_error"`
	Reason    string `json:"reason"`
}

// ownServer reads the ledger a server wrote of its own calls: every call
// started and finished, the charges, the events emitted and, when it
// records them (withSessions), the sessions.
func ownServer(dir, program string, withSessions bool) (ServerRecord, error) {
	lines, err := readJSONL[ledgerLine](filepath.Join(dir, "ledger.jsonl"))
	if err != nil {
		return ServerRecord{}, err
	}
	rec := ServerRecord{Program: program, ExecutionsKnown: true, KeysShown: true, Resumable: true} // the reference server and byo-server keep an event store
	open := map[string]int{}
	var sessions, emitted int64
	for _, l := range lines {
		ev := fmt.Sprintf("ledger n=%d", l.N)
		id := requestName(l.Session, l.Client, l.RequestID)
		switch l.Kind {
		case "session_opened":
			sessions++
		case "event_emitted":
			emitted++
		case "call_started":
			open[id] = len(rec.Executions)
			rec.Executions = append(rec.Executions, Execution{Tool: l.Tool, Key: l.OrderID, Session: l.Session, Request: id, Evidence: ev})
		case "charge":
			if j, ok := open[id]; ok {
				rec.Executions[j].Committed = true
			}
		case "call_finished":
			if j, ok := open[id]; ok {
				rec.Executions[j].Completed = true
				delete(open, id)
			}
		}
	}
	rec.Sessions = Unknown("it records no sessions")
	if withSessions {
		rec.Sessions = Exactly(sessions, "session_opened records in its ledger")
	}
	rec.Emitted = Exactly(emitted, "event_emitted records in its ledger")
	return rec, nil
}

// requestName names a request as both records can: its session and id, or
// at 2026-07-28 (no session) its client and id.
func requestName(session, client, requestID string) string {
	if session == "" {
		return client + " " + requestID
	}
	return session + " " + requestID
}

// readJSONL decodes every line of a JSON-lines file.
func readJSONL[T any](path string) ([]T, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []T
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 || line[0] == 0 {
			continue
		}
		var v T
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, n, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

package groundtruth

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The shops of examples/blackbox print a line per charge; shop-gosdk with
// --log-rows also prints a line per progress notification it sent.

var (
	shopChargeRE = regexp.MustCompile(`^charged order (\S+): \d+ cents`)
	shopRowRE    = regexp.MustCompile(`^sent row (\d+) of (\d+) \(session (\S*), progress token (\S+)\): progress`)
)

// shop reads a shop's stdout (in the server's log); exports says the
// workload calls export_rows (place_order sends no events).
func shop(lines []string, program string, logRows, exporting bool) ServerRecord {
	rec := ServerRecord{Program: program, ExecutionsKnown: true, KeysShown: true, Resumable: true,
		Sessions: Unknown("it logs no sessions"),
		Limits: []string{"a call that did not charge (cut by a crash before its provider answered) is not in its record",
			"it logs no sessions"}}
	var rows int64
	exports := map[string]int{} // session and progress token to the export's execution
	for i, l := range lines {
		ev := fmt.Sprintf("server log line %d", i+1)
		if m := shopChargeRE.FindStringSubmatch(l); m != nil {
			rec.Executions = append(rec.Executions, Execution{Tool: "place_order", Key: m[1], Completed: true, Committed: true, Evidence: ev})
			continue
		}
		m := shopRowRE.FindStringSubmatch(l)
		if m == nil || !logRows {
			continue
		}
		rows++
		row, _ := strconv.Atoi(m[1])
		total, _ := strconv.Atoi(m[2])
		id := m[3] + "\x00" + m[4]
		j, ok := exports[id]
		if !ok || row == 1 {
			j = len(rec.Executions)
			exports[id] = j
			rec.Executions = append(rec.Executions, Execution{Tool: "export_rows", Session: m[3], EmittedKnown: true, Evidence: ev})
		}
		e := &rec.Executions[j]
		e.Emitted++
		if row == total {
			e.Completed, e.Committed = true, true
		}
	}
	switch {
	case logRows:
		rec.Emitted = Exactly(rows, "its 'sent row' lines")
	case !exporting:
		rec.Emitted = Exactly(0, "place_order sends no events (its source)")
	default:
		rec.Emitted = Unknown("it prints no line per progress event (run without --log-rows)")
	}
	return rec
}

// The retry-client of examples/blackbox prints, per operation, "CALL TOOL:
// ok", "CALL TOOL: failed: ERR", and "CALL TOOL: ERR; calling again on a
// fresh session" before each retry; it exits 1 when some call failed.

var retryLineRE = regexp.MustCompile(`^(\S+) (\S+): (ok|failed: (.*)|(.*); calling again on a fresh session)$`)

// byoOperations is the operations file the runner handed a bring-your-own
// client (targets/byo), as the client read it.
type byoOperations struct {
	Operations []struct {
		Client     string          `json:"client"`
		Call       string          `json:"call"`
		Tool       string          `json:"tool"`
		Arguments  json.RawMessage `json:"arguments"`
		Idempotent bool            `json:"idempotent"`
	} `json:"operations"`
}

// retryClient reads the client's stdout and the operations it was given;
// key is the workload's key path of a tool.
func retryClient(dir string, lines []string, key func(tool string) string) (ClientRecord, error) {
	b, err := os.ReadFile(filepath.Join(dir, "state", "client", "operations.json"))
	if err != nil {
		return ClientRecord{}, err
	}
	var ops byoOperations
	if err := json.Unmarshal(b, &ops); err != nil {
		return ClientRecord{}, fmt.Errorf("operations.json: %w", err)
	}
	rec := ClientRecord{Program: "retry-client", Received: Exactly(0, "it asks for no progress (its source)"),
		Gapped: Exactly(0, "it surfaces no gaps (its source)")}
	calls := map[string]*Call{}
	for _, op := range ops.Operations {
		var args map[string]any
		_ = json.Unmarshal(op.Arguments, &args)
		calls[op.Call] = &Call{Client: op.Client, ID: op.Call, Tool: op.Tool, Key: keyOf(args, key(op.Tool)), Idempotent: op.Idempotent}
	}
	var forks, sessions int64
	connected := map[string]bool{} // clients holding a session
	dropped := map[string]bool{}   // clients that dropped a live session for a retry
	for i, l := range lines {
		m := retryLineRE.FindStringSubmatch(strings.TrimSpace(l))
		if m == nil || calls[m[1]] == nil {
			continue
		}
		c := calls[m[1]]
		c.Attempts++
		c.Evidence = fmt.Sprintf("client log line %d", i+1)
		errText := m[4] + m[5]
		if !strings.HasPrefix(errText, "connect:") && !connected[c.Client] { // this attempt opened a session
			sessions++
			connected[c.Client] = true
			if dropped[c.Client] {
				forks++
				dropped[c.Client] = false
			}
		}
		if errText != "" && errText != "the tool reported an error" && brokeInFlight(errText) && c.Hit == "" {
			c.Hit = c.Evidence + ": " + errText
		}
		switch {
		case m[3] == "ok":
			c.Outcome, c.ResultRead = OutcomeOK, true
		case m[5] != "": // a retry follows on a fresh session: the old one is dropped, not closed
			dropped[c.Client] = dropped[c.Client] || connected[c.Client]
			connected[c.Client] = false
		default:
			c.Outcome = OutcomeFailed
			c.ResultRead = errText == "the tool reported an error" || !noAnswer(errText)
		}
	}
	for _, op := range ops.Operations {
		if c := calls[op.Call]; c.Attempts > 0 {
			rec.Calls = append(rec.Calls, *c)
		}
	}
	rec.CallsMade = Exactly(int64(len(rec.Calls)), "its line per operation")
	rec.Sessions = Exactly(sessions, "its lines: an attempt that did not fail to connect held a session, a new one after each retry")
	rec.Forks = Exactly(forks, "its lines: a retry drops a live session without closing it, and the next attempt that connects opens another")
	return rec, nil
}

// mcp-go's examples/simple_client initializes, pings, lists the tools and
// the resources, printing each step; any failure is fatal. It calls no
// tool.

var simpleFatalRE = regexp.MustCompile(`Failed to (\w[\w ]*): (.*)`)

func simpleClient(lines []string) ClientRecord {
	rec := ClientRecord{Program: "mcpgo-simple-client", NoCalls: true, NeverResends: true,
		CallsMade: Exactly(0, "it calls no tool (its source)"), Received: Exactly(0, "it calls no tool"),
		Gapped: Exactly(0, "it calls no tool"), Forks: Exactly(0, "it connects once (its source)")}
	var connected int64
	for _, l := range lines {
		if strings.HasPrefix(l, "Connected to server:") {
			connected++
		}
		if simpleFatalRE.MatchString(l) {
			rec.Died = strings.TrimSpace(l)
		}
	}
	rec.Sessions = Exactly(connected, "its 'Connected to server' line")
	return rec
}

// conformanceServer is the record of a conformance server, which keeps
// none: nothing of the server's side is established but what its flags
// say (a stateless go-sdk server opens no session).
func conformanceServer(program string, argv []string) ServerRecord {
	rec := ServerRecord{Program: program, Sessions: Unknown("it logs nothing"),
		Emitted: Unknown("it logs nothing: what an execution sent is not in any record of its own"),
		Limits:  []string{"it logs nothing per call: executions, results and events sent are not established"}}
	if program == "gosdk-conformance-server" && !slices.Contains(argv, "-stateless=false") {
		rec.Sessions = Exactly(0, "it runs stateless (-stateless defaults to true): it opens no session")
	}
	return rec
}

package groundtruth

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/chaosrun/chaosrun/harness/results"
	"github.com/chaosrun/chaosrun/harness/spec"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// Run is one corpus run, judged and held against its truth.
type Run struct {
	Name    string // the experiment's folder
	Runtime string
	Server  string // the server program (or chaosrun target)
	Client  string
	Faults  []string
	Truth   Truth
	Verdict Verdict
	// Disagreements are every claim of the verdict the truth contradicts.
	Disagreements []Disagreement
}

// Label names the run in tables: its folder and runtime.
func (r Run) Label() string { return r.Name + " (" + r.Runtime + ")" }

// Check judges one experiment's results folder from the wire alone (the
// records chaosrun's own programs keep are left out, since they are
// oracles here), reads the programs' own records, and holds the verdict
// against them.
func Check(dir, runtime string) (Run, error) {
	x, err := spec.Load(filepath.Join(dir, results.ExperimentFile))
	if err != nil {
		return Run{}, err
	}
	run := Run{Name: filepath.Base(dir), Runtime: runtime}
	for _, f := range x.Faults {
		run.Faults = append(run.Faults, f.Kind)
	}
	calls := plannedCalls(x)
	server, err := serverRecord(dir, x, calls)
	if err != nil {
		return run, fmt.Errorf("%s: server oracle: %w", run.Name, err)
	}
	client, err := clientRecord(dir, x, calls)
	if err != nil {
		return run, fmt.Errorf("%s: client oracle: %w", run.Name, err)
	}
	run.Server, run.Client = server.Program, client.Program
	run.Truth = Derive(server, client)
	judged, err := results.RejudgeWith(dir, results.RejudgeOptions{Without: []string{results.RecordLedger, results.RecordHistory}})
	if err != nil {
		return run, err
	}
	res := judged.Results[0]
	if res.Verdict == nil {
		return run, fmt.Errorf("%s: no verdict: %s", run.Name, res.Error)
	}
	var b bytes.Buffer
	if err := res.Verdict.WriteJSON(&b); err != nil {
		return run, err
	}
	if run.Verdict, err = ParseVerdict(b.Bytes()); err != nil {
		return run, err
	}
	label := run.Label()
	run.Disagreements = Compare(label, run.Truth, run.Verdict)
	dangling, err := danglingEvidence(dir, run.Verdict)
	if err != nil {
		return run, err
	}
	for _, d := range dangling {
		run.Disagreements = append(run.Disagreements, Disagreement{Run: label, Kind: DanglingEvidence, What: "evidence",
			Oracle: "the run's records", Checker: d})
	}
	return run, nil
}

// plannedCall is one call the workload asks for: its key value and whether
// it may be repeated.
type plannedCall struct {
	tool, keyPath, key string
	idempotent         bool
}

// plannedCalls are the workload's calls by call id.
func plannedCalls(x *spec.Experiment) map[string]plannedCall {
	out := map[string]plannedCall{}
	for _, c := range x.Plan(spec.Overrides{}).Template.Expand().Clients {
		for _, call := range c.Calls {
			var args map[string]any
			if raw, err := call.Arguments(); err == nil {
				_ = json.Unmarshal(raw, &args)
			}
			key := keyOf(args, call.Key)
			if call.Tool == mcp.ToolCharge || call.Tool == mcp.ToolChatty {
				key = call.OrderID() // what chaosrun's own servers record of a call
			}
			out[call.ID] = plannedCall{tool: call.Tool, keyPath: call.Key, key: key, idempotent: call.IsIdempotent()}
		}
	}
	return out
}

// toolKey returns the key path that names a tool's operations: the
// workload's key:, or for charge its order_id (check.DefaultOps).
func toolKey(calls map[string]plannedCall) func(tool string) string {
	return func(tool string) string {
		for _, c := range calls {
			if c.tool == tool && c.keyPath != "" {
				return c.keyPath
			}
		}
		if tool == mcp.ToolCharge {
			return "order_id"
		}
		return ""
	}
}

func idempotentTool(calls map[string]plannedCall, tool string) bool {
	for _, c := range calls {
		if c.tool == tool {
			return c.idempotent
		}
	}
	return false
}

// ownClients are chaosrun's clients, which keep a history.
var ownClients = []string{targets.Naive, targets.Resumable, targets.GoSDK, targets.MCPGo}

// commandOf is the command a target of the user's runs (target command),
// as its options hold it.
func commandOf(o targets.Options) []string {
	switch o := o.(type) {
	case *catalog.CommandOptions:
		return o.Command
	case *catalog.ClientCommandOptions:
		return o.Command
	}
	return nil
}

func serverRecord(dir string, x *spec.Experiment, calls map[string]plannedCall) (ServerRecord, error) {
	switch x.Server.Target {
	case targets.Reference:
		return ownServer(dir, targets.Reference, true)
	case targets.Command:
	default:
		return ServerRecord{}, fmt.Errorf("server target %s has no oracle in the corpus", x.Server.Target)
	}
	command := commandOf(x.Server.Options)
	bin := filepath.Base(command[0])
	lines, err := logLines(filepath.Join(dir, "logs", "server.log"))
	if err != nil {
		return ServerRecord{}, err
	}
	switch bin {
	case "gosdk-http":
		return gosdkHTTPServer(lines), nil
	case "mcpgo-everything":
		return mcpgoEverything(lines, toolKey(calls), slices.Contains(ownClients, x.Client.Target)), nil
	case "gosdk-conformance-server", "mcpgo-conformance-server":
		return conformanceServer(bin, command), nil
	case "shop-gosdk", "shop-mcpgo":
		exports := slices.ContainsFunc(slices.Collect(maps.Values(calls)), func(c plannedCall) bool { return c.tool == "export_rows" })
		return shop(lines, bin, slices.Contains(command, "--log-rows"), exports), nil
	case "byo-server":
		return ownServer(dir, bin, false)
	}
	return ServerRecord{}, fmt.Errorf("server program %s has no oracle in the corpus", bin)
}

func clientRecord(dir string, x *spec.Experiment, calls map[string]plannedCall) (ClientRecord, error) {
	keyPath := toolKey(calls)
	if slices.Contains(ownClients, x.Client.Target) {
		rec, err := ownClient(dir, x.Client.Target,
			func(call string) string { return calls[call].key },
			func(call string) bool { return calls[call].idempotent })
		for i := range rec.Calls {
			rec.Calls[i].Keyed = keyPath(rec.Calls[i].Tool) != ""
		}
		return rec, err
	}
	if x.Client.Target != targets.Command {
		return ClientRecord{}, fmt.Errorf("client target %s has no oracle in the corpus", x.Client.Target)
	}
	lines, err := logLines(filepath.Join(dir, "logs", "client.log"))
	if err != nil {
		return ClientRecord{}, err
	}
	var rec ClientRecord
	command := commandOf(x.Client.Options)
	bin := filepath.Base(command[0])
	switch bin {
	case "gosdk-http":
		rec = gosdkHTTPClient(lines)
	case "gosdk-loadtest":
		rec = gosdkLoadtest(lines, command, keyPath(parseLoadtestFlags(command).tool))
	case "mcpgo-simple-client":
		rec = simpleClient(lines)
	case "retry-client":
		if rec, err = retryClient(dir, lines, keyPath); err != nil {
			return rec, err
		}
	default:
		return ClientRecord{}, fmt.Errorf("client program %s has no oracle in the corpus", bin)
	}
	for i := range rec.Calls {
		if !rec.Calls[i].Idempotent {
			rec.Calls[i].Idempotent = idempotentTool(calls, rec.Calls[i].Tool)
		}
		rec.Calls[i].Keyed = keyPath(rec.Calls[i].Tool) != ""
	}
	exit, err := clientExit(dir)
	if err != nil {
		return rec, err
	}
	rec.Exit, rec.ExitUS, rec.Stopped = exit.Code, exit.TUS, exit.Stopped
	if *exit.Code != 0 && rec.Died == "" {
		rec.Died = lastLine(lines)
	}
	if rec.FaultUS, err = firstInjection(dir); err != nil {
		return rec, err
	}
	return rec, nil
}

// exitRecord is how the runtime kept a bring-your-own client's end
// (client-exit.json, targets/byo).
type exitRecord struct {
	Code    *int  `json:"code"`
	Stopped bool  `json:"stopped"`
	TUS     int64 `json:"t_us"`
}

func clientExit(dir string) (exitRecord, error) {
	var exit exitRecord
	for _, p := range []string{filepath.Join(dir, "client-exit.json"), filepath.Join(dir, "state", "client", "client-exit.json")} {
		b, err := os.ReadFile(p)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return exit, err
		}
		if err := json.Unmarshal(b, &exit); err != nil || exit.Code == nil {
			return exit, fmt.Errorf("%s: no exit code", p)
		}
		return exit, nil
	}
	return exit, errors.New("no client-exit.json: the client's exit was not kept")
}

// firstInjection is when the runner's fault log says the first fault was
// injected, -1 when none was (an injection that failed is none).
func firstInjection(dir string) (int64, error) {
	type injection struct {
		StartUS int64  `json:"start_us"`
		Error   string `json:"error"`
	}
	log, err := readJSONL[injection](filepath.Join(dir, "faults.jsonl"))
	if errors.Is(err, os.ErrNotExist) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	first := int64(-1)
	for _, f := range log {
		if f.Error == "" && (first < 0 || f.StartUS < first) {
			first = f.StartUS
		}
	}
	return first, nil
}

// logLines reads an agent's log, one entry per line.
func logLines(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		lines = append(lines, strings.TrimRight(sc.Text(), "\r"))
	}
	return lines, sc.Err()
}

package groundtruth

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The go-sdk's examples/client/loadtest: -workers clients, each connecting
// once (all named "mcp-client") and calling -tool with -args on every tick
// for -duration, each call given up after -timeout. With -v it prints a
// SUCCESS line (the result: an error result too) or a FAILURE line (the
// error) per call, and at the end the counts. A call still in flight when the duration ends is
// neither printed nor counted, so the calls it made are a range: those
// printed, and up to one more per worker. A worker that cannot connect is
// fatal to the whole program. It never sends a call twice and asks for no
// progress.

var (
	loadSuccessRE = regexp.MustCompile(`SUCCESS: (.*)`)
	loadFailureRE = regexp.MustCompile(`FAILURE: (.*)`)
	loadCountRE   = regexp.MustCompile(`^\s*(success|failure): (\d+) `)
)

// loadtestFlags are the flags of its command the oracle needs.
type loadtestFlags struct {
	workers int
	tool    string
	args    map[string]any
}

func parseLoadtestFlags(argv []string) loadtestFlags {
	f := loadtestFlags{workers: 10}
	for _, a := range argv {
		name, value, ok := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !ok || !strings.HasPrefix(a, "-") {
			continue
		}
		switch name {
		case "workers":
			f.workers, _ = strconv.Atoi(value)
		case "tool":
			f.tool = value
		case "args":
			_ = json.Unmarshal([]byte(value), &f.args)
		}
	}
	return f
}

// gosdkLoadtest reads the client's log; argv is its command, key the
// workload's key path of its tool.
func gosdkLoadtest(lines []string, argv []string, key string) ClientRecord {
	f := parseLoadtestFlags(argv)
	rec := ClientRecord{Program: "gosdk-loadtest", NeverResends: true, Abandoned: true,
		Received: Exactly(0, "it asks for no progress (its source)"), Gapped: Exactly(0, "it surfaces no gaps (its source)"),
		Forks:  Exactly(0, "each worker connects once (its source)"),
		Limits: []string{"a call in flight when its -duration ends is not printed: the calls made are a range, and what became of those calls is not in its record"}}
	opKey := keyOf(f.args, key)
	counted := map[string]int64{}
	printed := map[string]int64{}
	done := false
	for i, l := range lines {
		ev := fmt.Sprintf("client log line %d", i+1)
		if m := loadSuccessRE.FindStringSubmatch(l); m != nil {
			// It counts any answer a success, an error result
			// ("isError": true) too: that call failed.
			printed["success"]++
			var result struct {
				IsError bool `json:"isError"`
			}
			c := Call{Client: "mcp-client", Tool: f.tool, Key: opKey, Outcome: OutcomeOK, ResultRead: true, Attempts: 1, Evidence: ev}
			if json.Unmarshal([]byte(m[1]), &result) == nil && result.IsError {
				c.Outcome = OutcomeFailed
			}
			rec.Calls = append(rec.Calls, c)
			continue
		}
		if m := loadFailureRE.FindStringSubmatch(l); m != nil {
			printed["failure"]++
			c := Call{Client: "mcp-client", Tool: f.tool, Key: opKey, Outcome: OutcomeFailed, Attempts: 1, Evidence: ev}
			c.ResultRead = !noAnswer(m[1])
			if brokeInFlight(m[1]) {
				c.Hit = ev + ": " + m[1]
			}
			rec.Calls = append(rec.Calls, c)
			continue
		}
		if m := loadCountRE.FindStringSubmatch(l); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			counted[m[1]] = n
			done = true
		}
	}
	n := int64(len(rec.Calls))
	rec.CallsMade = Between(n, n+int64(f.workers), "its SUCCESS and FAILURE lines, and up to one call per worker in flight when it stopped")
	switch {
	case !done:
		rec.Died = lastLine(lines)
		rec.Limits = append(rec.Limits, "it died before printing its counts")
	case counted["success"] != printed["success"] || counted["failure"] != printed["failure"]:
		rec.Limits = append(rec.Limits, fmt.Sprintf("its counts (%d success, %d failure) differ from its lines (%d, %d)",
			counted["success"], counted["failure"], printed["success"], printed["failure"]))
	}
	sessions := int64(f.workers)
	if rec.Died != "" {
		rec.Sessions = Between(0, sessions, "a worker that cannot connect ends the program")
	} else {
		rec.Sessions = Exactly(sessions, "one session per worker (its source)")
	}
	return rec
}

// keyOf returns the value at the dot-separated path in args (a string as
// is, anything else as JSON), or with no path the whole arguments as JSON
// (keys sorted): what names a call's operation.
func keyOf(args map[string]any, path string) string {
	if args == nil {
		return ""
	}
	if path == "" {
		b, _ := json.Marshal(args)
		return string(b)
	}
	var v any = args
	for _, part := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = m[part]
	}
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func lastLine(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}

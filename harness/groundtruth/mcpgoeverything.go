package groundtruth

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// mcp-go's examples/everything: its hooks print, on stderr, beforeCallTool
// when a call reaches its tool and afterCallTool with the result when the
// tool returns (the request printed with %v: its headers, with
// Mcp-Session-Id, and the raw JSON of its arguments as a byte list), onError
// for a request that failed, and afterInitialize for every session opened.
// longRunningOperation {duration, steps} sends progress 1 to steps of steps
// when the call carries a progress token, and fails at the first
// notification it cannot send; notify sends one notification, 10 of 10,
// under progress token 0 whatever the call carries: not an event of the
// call.

var (
	everythingBeforeRE = regexp.MustCompile(`^beforeCallTool: (\S+), `)
	everythingAfterRE  = regexp.MustCompile(`^afterCallTool: (\S+), `)
	everythingErrorRE  = regexp.MustCompile(`^onError: (\S+), (\S+), `)
	everythingInitRE   = regexp.MustCompile(`^afterInitialize: `)
	everythingSession  = regexp.MustCompile(`Mcp-Session-Id:\[(\S*)\]`)
	// everythingParams is the printed CallToolParams: the tool's name, its
	// arguments as a map, and at the end the raw arguments as bytes.
	everythingParams = regexp.MustCompile(`\] \{(\S+) map\[.*?\[([0-9 ]*)\]\}\}`)
	everythingIsErr  = regexp.MustCompile(`\] (true|false)\}$`)
)

// mcpgoEverything reads the server's log; key gives each tool's key path
// in the workload, progress says the client sends a progress token.
func mcpgoEverything(lines []string, key func(tool string) string, progress bool) ServerRecord {
	rec := ServerRecord{Program: "mcpgo-everything", ExecutionsKnown: true, KeysShown: true}
	open := map[string]int{} // session and request id to its execution
	sessions := int64(0)
	for i, l := range lines {
		ev := fmt.Sprintf("server log line %d", i+1)
		switch {
		case everythingInitRE.MatchString(l):
			sessions++
		case everythingBeforeRE.MatchString(l):
			id := everythingBeforeRE.FindStringSubmatch(l)[1]
			e := Execution{Session: sessionOf(l), Evidence: ev}
			if m := everythingParams.FindStringSubmatch(l); m != nil {
				e.Tool = m[1]
				e.Key = keyOf(rawArgs(m[2]), key(m[1]))
			}
			open[e.Session+"\x00"+id] = len(rec.Executions)
			rec.Executions = append(rec.Executions, e)
		case everythingAfterRE.MatchString(l):
			id := everythingAfterRE.FindStringSubmatch(l)[1]
			j, ok := open[sessionOf(l)+"\x00"+id]
			if !ok {
				continue
			}
			delete(open, sessionOf(l)+"\x00"+id)
			e := &rec.Executions[j]
			e.Completed = true
			isErr := everythingIsErr.FindStringSubmatch(l)
			e.Committed = isErr == nil || isErr[1] == "false"
			e.Emitted, e.EmittedKnown = everythingEmitted(l, e.Tool, progress, e.Committed)
		case everythingErrorRE.MatchString(l):
			m := everythingErrorRE.FindStringSubmatch(l)
			if m[1] != "tools/call" {
				continue
			}
			j, ok := open[sessionOf(l)+"\x00"+m[2]]
			if !ok {
				if rec.Refused == "" {
					rec.Refused = strings.TrimSpace(l)
				}
				continue
			}
			delete(open, sessionOf(l)+"\x00"+m[2])
			e := &rec.Executions[j]
			e.Completed = true
			if err := errorOf(l); strings.Contains(err, "not found") || strings.Contains(err, "invalid") {
				// refused before the tool ran: an unknown tool, bad arguments
				e.Tool = ""
				if rec.Refused == "" {
					rec.Refused = err
				}
			}
			if e.Tool == "notify" || e.Tool == "" || !progress {
				e.Emitted, e.EmittedKnown = 0, true
			}
		}
	}
	rec.Sessions = Exactly(sessions, "afterInitialize lines in its log")
	// Its account is what its tools sent. mcp-go's streamable server may
	// still drop the last notification of a call whose tool returns right
	// after sending it (its forwarder and the result race; seen in the
	// corpus, the result crossing the server edge and the notification
	// never), so what left the server is that, less up to one per call.
	var emitted, racy int64
	known := true
	for _, e := range rec.Executions {
		if !e.EmittedKnown {
			known = false
		}
		emitted += e.Emitted
		if e.Emitted > 0 {
			racy++
		}
	}
	if known {
		rec.Emitted = Between(emitted-racy, emitted, "progress events its completed calls sent (its hooks and its source), less up to one per call that mcp-go may drop as the result goes out")
	} else {
		rec.Emitted = Unknown("a call that did not complete sent an unknown part of its progress events")
	}
	rec.Limits = []string{"a longRunningOperation that failed or never returned sent an unknown number of its events"}
	return rec
}

// everythingEmitted is how many progress events a completed call sent, by
// the tool's source, from its arguments printed on the afterCallTool line.
func everythingEmitted(line, tool string, progress, ok bool) (int64, bool) {
	switch tool {
	case "notify":
		// Its one notification carries progress token 0, not the call's:
		// it is no event of the call.
		return 0, true
	case "longRunningOperation":
		if !progress {
			return 0, true
		}
		if !ok {
			return 0, false
		}
		m := everythingParams.FindStringSubmatch(line)
		if m == nil {
			return 0, false
		}
		args := rawArgs(m[2])
		steps := 5.0
		if s, ok := args["steps"].(float64); ok {
			steps = s
		}
		return int64(steps), true
	}
	return 0, true
}

// errorOf is the error an onError line ends with, after the request it
// prints.
func errorOf(line string) string {
	if i := strings.LastIndex(line, "}}, "); i >= 0 {
		return strings.TrimSpace(line[i+4:])
	}
	return ""
}

func sessionOf(line string) string {
	if m := everythingSession.FindStringSubmatch(line); m != nil {
		return m[1]
	}
	return ""
}

// rawArgs decodes arguments printed as a Go byte slice ("123 34 ...").
func rawArgs(bytes string) map[string]any {
	var b []byte
	for _, f := range strings.Fields(bytes) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 255 {
			return nil
		}
		b = append(b, byte(n))
	}
	var args map[string]any
	if json.Unmarshal(b, &args) != nil {
		return nil
	}
	return args
}

package groundtruth

import (
	"fmt"
	"regexp"
	"strings"
)

// The go-sdk's examples/http, as a server: its logging middleware writes a
// [REQUEST] line when a method reaches the server and a [RESPONSE] line
// with its status when the handler returns, each with the session id. It
// does not log a call's arguments, and its one tool, cityTime, sends no
// events.

var (
	httpRequestRE  = regexp.MustCompile(`\[REQUEST\] Session: (\S*) \| Method: (\S+)`)
	httpResponseRE = regexp.MustCompile(`\[RESPONSE\] Session: (\S*) \| Method: (\S+) \| Status: (OK|ERROR)(?: \| Duration: \S+)?(?: \| Error: (.*))?`)
)

// gosdkHTTPServer reads the server's log.
func gosdkHTTPServer(lines []string) ServerRecord {
	rec := ServerRecord{Program: "gosdk-http", ExecutionsKnown: true,
		Emitted: Exactly(0, "cityTime sends no events (its source)"),
		Limits:  []string{"its log shows no arguments: executions per operation only where the client never sends a call twice"}}
	open := map[string][]int{} // session to its executions not yet answered, in order
	sessions := map[string]bool{}
	for i, l := range lines {
		if m := httpRequestRE.FindStringSubmatch(l); m != nil {
			switch m[2] {
			case "initialize":
				sessions[m[1]] = true
			case "tools/call":
				open[m[1]] = append(open[m[1]], len(rec.Executions))
				rec.Executions = append(rec.Executions, Execution{Tool: "cityTime", Session: m[1],
					Evidence: fmt.Sprintf("server log line %d", i+1)})
			}
			continue
		}
		m := httpResponseRE.FindStringSubmatch(l)
		if m == nil || m[2] != "tools/call" || len(open[m[1]]) == 0 {
			continue
		}
		e := &rec.Executions[open[m[1]][0]]
		open[m[1]] = open[m[1]][1:]
		e.Completed = true
		if m[3] == "OK" {
			e.Committed = true
			continue
		}
		// An error the handler returned: the SDK answers a call it
		// refused (an unknown tool, bad arguments) this way.
		e.Tool = ""
		if rec.Refused == "" {
			rec.Refused = strings.TrimSpace(m[4])
		}
	}
	rec.Sessions = Exactly(int64(len(sessions)), "initialize requests in its log")
	return rec
}

// The go-sdk's examples/http, as a client: it connects, lists the tools and
// calls cityTime for nyc, sf and boston in turn, printing for each either
// the result's text (indented; an error result's text too, such as
// "failed to load timezone" where the system has no time zone database)
// or "Failed to get time for CITY: ERR"; a failure to connect or to list
// the tools is fatal. It never sends a call twice and asks for no progress.

var (
	httpCities    = []string{"nyc", "sf", "boston"}
	httpStartRE   = regexp.MustCompile(`Getting time for each city\.\.\.`)
	httpOKRE      = regexp.MustCompile(`^\S+ \S+   The current time in .+ is `)
	httpResultRE  = regexp.MustCompile(`^\S+ \S+   (.*)`)
	httpFailRE    = regexp.MustCompile(`Failed to get time for (\w+): (.*)`)
	httpFatalRE   = regexp.MustCompile(`Failed to (connect|list tools): (.*)`)
	httpSessionRE = regexp.MustCompile(`Connected to server \(session ID: (\S*)\)`)
)

// gosdkHTTPClient reads the client's log.
func gosdkHTTPClient(lines []string) ClientRecord {
	rec := ClientRecord{Program: "gosdk-http", NeverResends: true,
		Received: Exactly(0, "it asks for no progress (its source)"), Gapped: Exactly(0, "it surfaces no gaps (its source)"),
		Forks: Exactly(0, "it connects once (its source)")}
	var connected int64
	calling := false // past "Getting time for each city...": one line per city, in turn
	for i, l := range lines {
		ev := fmt.Sprintf("client log line %d", i+1)
		switch {
		case httpSessionRE.MatchString(l):
			connected++
		case httpFatalRE.MatchString(l):
			rec.Died = strings.TrimSpace(l)
		case httpStartRE.MatchString(l):
			calling = true
		case !calling || len(rec.Calls) == len(httpCities):
		case httpFailRE.MatchString(l):
			m := httpFailRE.FindStringSubmatch(l)
			c := Call{Client: "time-client", ID: m[1], Tool: "cityTime", Key: m[1], Outcome: OutcomeFailed, Attempts: 1, Evidence: ev}
			c.ResultRead = !noAnswer(m[2])
			if brokeInFlight(m[2]) {
				c.Hit = ev + ": " + m[2]
			}
			rec.Calls = append(rec.Calls, c)
		case httpResultRE.MatchString(l):
			city := httpCities[len(rec.Calls)]
			c := Call{Client: "time-client", ID: city, Tool: "cityTime", Key: city, Outcome: OutcomeOK, ResultRead: true, Attempts: 1, Evidence: ev}
			if !httpOKRE.MatchString(l) { // an error result's text
				c.Outcome = OutcomeFailed
			}
			rec.Calls = append(rec.Calls, c)
		}
	}
	rec.CallsMade = Exactly(int64(len(rec.Calls)), "its printed result or failure per city")
	rec.Sessions = Exactly(connected, "its 'Connected to server' line")
	return rec
}

// brokeInFlight reports whether a client's error for a call says a fault
// broke it in flight (a reset or an end of its stream, a timeout, a 503 in
// the answer's place), rather than that it never left the client (its
// connection refused or reset as it was dialled) or that the server no
// longer knew its session (a 404 after the server lost it: an answer to a
// call made after the fault, not a call the fault caught).
func brokeInFlight(err string) bool {
	if status404.MatchString(err) {
		return false
	}
	for _, s := range []string{"session not found", "dial tcp", "connect:", "failed to connect"} {
		if strings.Contains(err, s) {
			return false
		}
	}
	return noAnswer(err)
}

// Status codes in an error line, as words: not the digits of a port
// (":40427") or of another number.
var (
	status404 = regexp.MustCompile(`(^|[^\w:.])404($|[^\w.])`)
	status503 = regexp.MustCompile(`(^|[^\w:.])503($|[^\w.])`)
)

// noAnswer reports whether a client's error for a call says it got no
// answer from the server (a transport failure, a timeout, a 404 or 503 in
// the answer's place), rather than the server's refusal of the call itself
// (an unknown tool, bad arguments), which is an answer read.
func noAnswer(err string) bool {
	for _, s := range []string{"unknown tool", "invalid params", "Invalid params", "-32602", "-32601", "method not found"} {
		if strings.Contains(err, s) {
			return false
		}
	}
	return true
}

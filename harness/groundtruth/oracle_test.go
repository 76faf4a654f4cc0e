package groundtruth

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func lines(s string) []string { return strings.Split(strings.TrimPrefix(s, "\n"), "\n") }

func TestGosdkHTTPServer(t *testing.T) {
	rec := gosdkHTTPServer(lines(`
2026/12/03 09:23:40 MCP server listening on 127.0.0.1:37689
2026/12/03 09:23:40 [REQUEST] Session: D1 | Method: server/discover
2026/12/03 09:23:40 [RESPONSE] Session: D1 | Method: server/discover | Status: OK | Duration: 164.305µs
2026/12/03 09:23:41 [REQUEST] Session: S1 | Method: initialize
2026/12/03 09:23:41 [RESPONSE] Session: S1 | Method: initialize | Status: OK | Duration: 341.329µs
2026/12/03 09:23:42 [REQUEST] Session: S1 | Method: tools/call
2026/12/03 09:23:42 [RESPONSE] Session: S1 | Method: tools/call | Status: OK | Duration: 1.1ms
2026/12/03 09:23:42 [REQUEST] Session: S1 | Method: tools/call
2026/12/03 09:23:42 [REQUEST] Session: S1 | Method: tools/call
2026/12/03 09:23:42 [RESPONSE] Session: S1 | Method: tools/call | Status: ERROR | Duration: 20µs | Error: unknown tool "cityTme"
2026/12/03 09:23:42 MCP server listening on 127.0.0.1:37689`))
	require.Len(t, rec.Executions, 3)
	assert.True(t, rec.Executions[0].Committed)
	assert.True(t, rec.Executions[1].Completed, "answers pair with requests in order, per session")
	assert.False(t, rec.Executions[1].Committed, "an error answer is no work done")
	assert.False(t, rec.Executions[2].Completed, "a call the log never answers did not complete")
	assert.Equal(t, `unknown tool "cityTme"`, rec.Refused)
	assert.Equal(t, Exactly(1, ""), Range{Known: true, Lo: rec.Sessions.Lo, Hi: rec.Sessions.Hi}, "discover opens no session")
	assert.False(t, rec.Resumable)
}

func TestGosdkHTTPClient(t *testing.T) {
	tests := []struct {
		name      string
		log       string
		calls     int64
		outcomes  []string
		read      []bool
		hit, died bool
	}{
		{"every city", `
2026/12/03 09:18:43 Connected to server (session ID: S1)
2026/12/03 09:18:43 Listing available tools...
2026/12/03 09:18:43   - cityTime: Get the current time in NYC, San Francisco, or Boston
2026/12/03 09:18:43 Getting time for each city...
2026/12/03 09:18:43   The current time in New York City is 2026-12-03T04:18:43-05:00
2026/12/03 09:18:43   The current time in San Francisco is 2026-12-03T01:18:43-08:00
2026/12/03 09:18:43   The current time in Boston is 2026-12-03T04:18:43-05:00
2026/12/03 09:18:43 Client completed successfully`, 3, []string{OutcomeOK, OutcomeOK, OutcomeOK}, []bool{true, true, true}, false, false},
		{"cut and refused", `
2026/12/03 09:18:43 Connected to server (session ID: S1)
2026/12/03 09:18:43 Getting time for each city...
2026/12/03 09:21:51 Failed to get time for nyc: calling "tools/call": request terminated without response
2026/12/03 09:21:51   The current time in San Francisco is 2026-12-03T01:21:51-08:00
2026/12/03 09:21:51 Failed to get time for boston: calling "tools/call": unknown tool "cityTime"`, 3,
			[]string{OutcomeFailed, OutcomeOK, OutcomeFailed}, []bool{false, true, true}, true, false},
		{"error results, with no time zone database", `
2026/12/03 09:48:11 Getting time for each city...
2026/12/03 09:48:11   failed to load timezone: unknown time zone America/New_York
2026/12/03 09:48:11   failed to load timezone: unknown time zone America/Los_Angeles
2026/12/03 09:48:11   failed to load timezone: unknown time zone America/New_York
2026/12/03 09:48:11 Client completed successfully`, 3, []string{OutcomeFailed, OutcomeFailed, OutcomeFailed}, []bool{true, true, true}, false, false},
		{"refused as it dialled", `
2026/12/03 09:18:43 Getting time for each city...
2026/12/03 09:21:51 Failed to get time for nyc: calling "tools/call": rejected by transport: Post "http://127.0.0.1:36521": dial tcp 127.0.0.1:36521: connect: connection reset by peer`,
			1, []string{OutcomeFailed}, []bool{false}, false, false},
		{"cut in flight on a port whose digits hold 404", `
2026/12/03 13:23:14 Getting time for each city...
2026/12/03 13:23:14 Failed to get time for nyc: calling "tools/call": sending "tools/call": rejected by transport: Post "http://127.0.0.1:40427": EOF`,
			1, []string{OutcomeFailed}, []bool{false}, true, false},
		{"a 404 after the server lost the session", `
2026/12/03 13:23:14 Getting time for each city...
2026/12/03 13:23:14 Failed to get time for nyc: calling "tools/call": sending "tools/call": Post "http://127.0.0.1:45031": 404 Not Found`,
			1, []string{OutcomeFailed}, []bool{false}, false, false},
		{"dead at connect", `
2026/12/03 09:23:39 Connecting to MCP server at http://127.0.0.1:45165
2026/12/03 09:23:39 Failed to connect: calling "initialize": rejected by transport: sending "initialize": Service Unavailable`,
			0, nil, nil, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := gosdkHTTPClient(lines(tc.log))
			assert.Equal(t, Exactly(tc.calls, rec.CallsMade.Source), rec.CallsMade)
			var outcomes []string
			var read []bool
			hit := false
			for _, c := range rec.Calls {
				outcomes, read = append(outcomes, c.Outcome), append(read, c.ResultRead)
				hit = hit || c.Hit != ""
			}
			assert.Equal(t, tc.outcomes, outcomes)
			assert.Equal(t, tc.read, read)
			assert.Equal(t, tc.hit, hit)
			assert.Equal(t, tc.died, rec.Died != "")
		})
	}
}

func TestGosdkLoadtest(t *testing.T) {
	argv := []string{"bin/gosdk-loadtest", "-v", "-workers=3", "-tool=cityTime", `-args={"city":"nyc"}`, "{url}"}
	full := lines(`
2026/12/03 09:23:45 SUCCESS: {"content":[{"type":"text","text":"The current time in New York City is 2026"}]}
2026/12/03 09:23:45 FAILURE: calling "tools/call": context deadline exceeded
2026/12/03 09:23:45 SUCCESS: {"content":[{"type":"text","text":"failed to load timezone"}],"isError":true}
2026/12/03 09:23:46 FAILURE: calling "tools/call": sending "tools/call": failed to connect (session ID: K7): session not found
Results (in 3.032762935s):
	success: 2 (13.8 QPS)
	failure: 2 (0 QPS)`)
	rec := gosdkLoadtest(full, argv, "city")
	assert.Equal(t, Between(4, 7, ""), Range{Known: true, Lo: rec.CallsMade.Lo, Hi: rec.CallsMade.Hi}, "up to one unprinted call per worker")
	require.Len(t, rec.Calls, 4)
	assert.Equal(t, OutcomeFailed, rec.Calls[2].Outcome, "an error result it counts a success")
	assert.True(t, rec.Calls[2].ResultRead)
	assert.Empty(t, rec.Calls[3].Hit, "a 404 after the server lost the session is no call the fault caught in flight")
	assert.False(t, rec.Calls[3].ResultRead)
	assert.Equal(t, "nyc", rec.Calls[0].Key)
	assert.NotEmpty(t, rec.Calls[1].Hit)
	assert.False(t, rec.Calls[1].ResultRead)
	assert.Equal(t, Exactly(3, ""), Range{Known: true, Lo: rec.Sessions.Lo, Hi: rec.Sessions.Hi})
	assert.Empty(t, rec.Died)
	assert.True(t, rec.NeverResends)

	dead := gosdkLoadtest(lines("2026/12/03 09:38:27 rejected by transport: sending \"initialize\": Service Unavailable"), argv, "city")
	assert.Contains(t, dead.Died, "Service Unavailable")
	assert.Equal(t, int64(0), dead.Sessions.Lo, "a worker that cannot connect ends the program")

	miscounted := gosdkLoadtest(append(full[:1:1], full[3:]...), argv, "city")
	assert.Contains(t, strings.Join(miscounted.Limits, "\n"), "differ from its lines")
}

func TestMcpgoEverything(t *testing.T) {
	before := `beforeCallTool: 2, &{{tools/call {<nil>}} map[Accept:[application/json, text/event-stream] Mcp-Session-Id:[mcp-session-9d] User-Agent:[Go-http-client/1.1]] {longRunningOperation map[duration:3 steps:4] 0x2a0d <nil> {map[] } [123 34 100 117 114 97 116 105 111 110 34 58 51 44 34 115 116 101 112 115 34 58 52 44 34 106 111 98 34 58 34 106 49 34 125]}}`
	after := strings.Replace(before, "beforeCallTool", "afterCallTool", 1) + `, &{{<nil> } {map[] } [{{<nil>} <nil> text Long running operation completed.}] <nil> [] false}`
	other := strings.NewReplacer("mcp-session-9d", "mcp-session-7e").Replace(before)
	rec := mcpgoEverything(lines(`afterInitialize: 1, &{...}
`+before+`
`+other+`
2026/12/03 09:25:01 ERROR Failed to write SSE event during drain err="broken pipe"
`+after), func(string) string { return "job" }, true)
	require.Len(t, rec.Executions, 2)
	e := rec.Executions[0]
	assert.Equal(t, "longRunningOperation", e.Tool)
	assert.Equal(t, "j1", e.Key, "the arguments, from the raw bytes its hooks print")
	assert.True(t, e.Completed && e.Committed)
	assert.Equal(t, int64(4), e.Emitted, "steps events, by its source")
	assert.False(t, rec.Executions[1].Completed, "the afterCallTool of another session's call")
	assert.False(t, rec.Emitted.Known, "a call that never returned sent an unknown part of its events")
	assert.Equal(t, int64(1), rec.Sessions.Lo)

	typo := strings.Replace(before, "longRunningOperation map", "longRunningOperaton map", 1)
	refused := mcpgoEverything(lines(typo+"\n"+strings.Replace(typo, "beforeCallTool: 2,", "onError: tools/call, 2,", 1)+
		", request error: tool 'longRunningOperaton' not found: tool not found"), func(string) string { return "job" }, true)
	assert.Equal(t, "request error: tool 'longRunningOperaton' not found: tool not found", refused.Refused)
	assert.False(t, refused.Executions[0].Committed)

	done := mcpgoEverything(lines(before+"\n"+after), func(string) string { return "job" }, true)
	assert.Equal(t, Between(3, 4, ""), Range{Known: true, Lo: done.Emitted.Lo, Hi: done.Emitted.Hi}, "the last event of a call may be dropped as its result goes out")

	noToken := mcpgoEverything(lines(before+"\n"+after), func(string) string { return "job" }, false)
	assert.Equal(t, Exactly(0, ""), Range{Known: true, Lo: noToken.Emitted.Lo, Hi: noToken.Emitted.Hi}, "no progress token, no events")
}

func TestShop(t *testing.T) {
	rec := shop(lines(`
sent row 1 of 3 (session A, progress token 2): progress 0.333 of 1
sent row 2 of 3 (session A, progress token 2): progress 0.667 of 1
sent row 1 of 3 (session B, progress token 4): progress 0.333 of 1
sent row 3 of 3 (session A, progress token 2): progress 1 of 1
sent row 2 of 3 (session B, progress token 4): progress 0.667 of 1
charged order order-c1-1: 4999 cents`), "shop-gosdk", true, true)
	require.Len(t, rec.Executions, 3)
	assert.True(t, rec.Executions[0].Completed, "interleaved exports are told apart by session and token")
	assert.Equal(t, int64(3), rec.Executions[0].Emitted)
	assert.False(t, rec.Executions[1].Completed)
	assert.Equal(t, "order-c1-1", rec.Executions[2].Key)
	assert.Equal(t, int64(5), rec.Emitted.Lo)
	assert.False(t, shop(nil, "shop-mcpgo", false, true).Emitted.Known, "exports, and no line per event")
	assert.Equal(t, int64(0), shop(nil, "shop-mcpgo", false, false).Emitted.Hi, "orders only: no events")
}

func TestRetryClient(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "state", "client"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "state", "client", "operations.json"), []byte(`{"operations": [
		{"client": "c1", "call": "c1-1", "tool": "place_order", "arguments": {"order_id": "order-c1-1"}},
		{"client": "c1", "call": "c1-2", "tool": "place_order", "arguments": {"order_id": "order-c1-2"}},
		{"client": "c1", "call": "c1-3", "tool": "place_order", "arguments": {"order_id": "order-c1-3"}}]}`), 0o644))
	rec, err := retryClient(dir, lines(`
c1-1 place_order: calling "tools/call": EOF; calling again on a fresh session
c1-1 place_order: ok
c1-2 place_order: calling "tools/call": EOF; calling again on a fresh session
c1-2 place_order: failed: connect: connection refused`), func(string) string { return "order_id" })
	require.NoError(t, err)
	require.Len(t, rec.Calls, 2, "c1-3 was never made")
	assert.Equal(t, 2, rec.Calls[0].Attempts)
	assert.Equal(t, OutcomeOK, rec.Calls[0].Outcome)
	assert.Equal(t, "order-c1-1", rec.Calls[0].Key)
	assert.Equal(t, OutcomeFailed, rec.Calls[1].Outcome)
	assert.False(t, rec.Calls[1].ResultRead)
	assert.Equal(t, int64(1), rec.Forks.Lo, "a session dropped live, and another opened; a failed connect opens none")
	assert.Equal(t, int64(2), rec.Sessions.Lo)
}

func TestSimpleClient(t *testing.T) {
	rec := simpleClient(lines(`
Initializing HTTP client...
Connected to server: chaosrun-reference (version 1)
2026/12/03 09:23:43 Failed to list tools: transport error: connection reset by peer`))
	assert.True(t, rec.NoCalls)
	assert.Contains(t, rec.Died, "Failed to list tools")
	assert.Equal(t, int64(1), rec.Sessions.Lo)
}

func TestOwnRecords(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "history.jsonl"), []byte(`{"client":"c1","kind":"session_new","session":"A"}
{"client":"c1","kind":"invoke","call":"c1-1","tool":"chatty","session":"A","request_id":"2","attempt":1}
{"client":"c1","kind":"event","call":"c1-1","session":"A","request_id":"2","detail":"priming"}
{"client":"c1","kind":"event","call":"c1-1","session":"A","request_id":"2","event_id":1,"detail":"notifications/progress"}
{"client":"c1","kind":"event","call":"c1-1","session":"A","request_id":"2","event_id":1,"detail":"notifications/progress"}
{"client":"c1","kind":"stream_break","call":"c1-1","session":"A","request_id":"2","reason":"reset"}
{"client":"c1","kind":"session_lost","session":"A","reason":"abandoned"}
{"client":"c1","kind":"session_new","session":"B"}
{"client":"c1","kind":"invoke","call":"c1-1","tool":"chatty","session":"B","request_id":"4","attempt":2}
{"client":"c1","kind":"unknown","call":"c1-1","session":"B","request_id":"4"}
`), 0o644))
	c, err := ownClient(dir, "naive", func(string) string { return "k" }, func(string) bool { return true })
	require.NoError(t, err)
	require.Len(t, c.Calls, 1)
	assert.Equal(t, 2, c.Calls[0].Attempts)
	assert.Equal(t, OutcomeUnknown, c.Calls[0].Outcome)
	assert.Equal(t, []string{"A 2", "B 4"}, c.Calls[0].Requests)
	assert.Contains(t, c.Calls[0].Hit, "stream_break reset")
	assert.Equal(t, int64(1), c.Received.Lo, "progress only, each event id once")
	assert.Equal(t, int64(1), c.Forks.Lo, "an abandoned session is still held by the server")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "ledger.jsonl"), []byte(`{"n":1,"kind":"session_opened","session":"A","client":"c1"}
{"n":2,"kind":"call_started","session":"A","client":"c1","request_id":"2","tool":"charge","order_id":"o1"}
{"n":3,"kind":"event_emitted","session":"A","request_id":"2"}
{"n":4,"kind":"charge","session":"A","client":"c1","request_id":"2","order_id":"o1"}
{"n":5,"kind":"call_finished","session":"A","request_id":"2"}
{"n":6,"kind":"call_started","client":"c2","request_id":"c2-2","tool":"charge","order_id":"o2"}
`), 0o644))
	s, err := ownServer(dir, "reference", true)
	require.NoError(t, err)
	require.Len(t, s.Executions, 2)
	assert.True(t, s.Executions[0].Completed && s.Executions[0].Committed)
	assert.Equal(t, "A 2", s.Executions[0].Request)
	assert.Equal(t, "c2 c2-2", s.Executions[1].Request, "2026-07-28: the client stands in for the session")
	assert.Equal(t, int64(1), s.Emitted.Lo)
	withoutSessions, err := ownServer(dir, "byo-server", false)
	require.NoError(t, err)
	assert.False(t, withoutSessions.Sessions.Known)
}

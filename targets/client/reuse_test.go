package client

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/targets/history"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// remotes lists the connection (the client's address) of every request the
// scripted server saw, in order.
func remotes(s *script) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.reqs))
	for i, r := range s.reqs {
		out[i] = r.remote
	}
	return out
}

// TestConnectionCarriesTheNextRequest: a session's opening and its calls go
// over one connection while every answer ends its stream; a stream the
// server keeps open after the answer is cut, so the next request opens a
// connection of its own; a broken stream's connection is never reused.
func TestConnectionCarriesTheNextRequest(t *testing.T) {
	// endedAfter answers with a stream that ends wait after the answer
	// (with a wait, the end comes in a read of its own).
	endedAfter := func(wait time.Duration) func(*script) func(http.ResponseWriter, *http.Request, mcp.Message, int) {
		return func(*script) func(http.ResponseWriter, *http.Request, mcp.Message, int) {
			return func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
				sse(w)
				priming(t, w, "1", 0)
				result(t, w, "2", m.ID, okResult())
				time.Sleep(wait)
			}
		}
	}
	ended := endedAfter(0)
	cases := []struct {
		name   string
		target string
		// onCall answers every call; onGet, when set, every resume.
		onCall func(s *script) func(w http.ResponseWriter, r *http.Request, m mcp.Message, n int)
		onGet  func(s *script) func(w http.ResponseWriter, r *http.Request, n int)
		// conns is how many connections the session's requests used (a
		// client that hangs on a held stream fails runClient's deadline).
		conns   int
		outcome int // calls that ended ok
	}{
		{name: "resumable, streams end", target: TargetResumable, onCall: ended, conns: 1, outcome: 2},
		{name: "resumable, streams end a little after the answer", target: TargetResumable, onCall: endedAfter(5 * time.Millisecond), conns: 1, outcome: 2},
		{name: "naive, streams end", target: TargetNaive, onCall: ended, conns: 1, outcome: 2},
		{name: "resumable, JSON answers", target: TargetResumable, conns: 1, outcome: 2,
			onCall: func(s *script) func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
				return func(w http.ResponseWriter, _ *http.Request, m mcp.Message, _ int) {
					res, err := mcp.NewResult(m.ID, okResult())
					assert.NoError(t, err)
					w.Header().Set("Content-Type", mcp.ContentTypeJSON)
					assert.NoError(t, json.NewEncoder(w).Encode(res))
				}
			}},
		{name: "resumable, streams held open", target: TargetResumable, conns: 2, outcome: 2,
			onCall: func(s *script) func(w http.ResponseWriter, r *http.Request, m mcp.Message, _ int) {
				return func(w http.ResponseWriter, r *http.Request, m mcp.Message, _ int) {
					sse(w)
					priming(t, w, "1", 0)
					result(t, w, "2", m.ID, okResult())
					<-r.Context().Done() // until the client cuts the stream
				}
			}},
		{name: "resumable, stream reset then resumed", target: TargetResumable, conns: 2, outcome: 2,
			onCall: func(s *script) func(w http.ResponseWriter, r *http.Request, m mcp.Message, n int) {
				return func(w http.ResponseWriter, r *http.Request, m mcp.Message, n int) {
					sse(w)
					priming(t, w, "1", time.Millisecond)
					if n == 1 {
						reset(t, w)
						return
					}
					result(t, w, "2", m.ID, okResult())
				}
			},
			onGet: func(s *script) func(w http.ResponseWriter, r *http.Request, n int) {
				return func(w http.ResponseWriter, r *http.Request, n int) {
					sse(w)
					result(t, w, "2", s.requests(mcp.MethodToolsCall)[0].msg.ID, okResult())
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newScript(t)
			s.onCall = tc.onCall(s)
			if tc.onGet != nil {
				s.onGet = tc.onGet(s)
			}
			g := newRig(s.url())
			require.NoError(t, runClient(t, tc.target, g, charge("c1-1"), charge("c1-2")))

			seenOn := map[string]bool{}
			for _, r := range remotes(s) {
				seenOn[r] = true
			}
			assert.Len(t, seenOn, tc.conns, "connections used by %v", remotes(s))
			assert.Len(t, kinds(g.history(t), history.KindOK), tc.outcome)
			assert.Len(t, s.requests(mcp.MethodInitialize), 1, "one session")
		})
	}
}

package check

import (
	"cmp"
	"slices"

	"github.com/chaosrun/chaosrun/targets/history"
)

type callKey struct{ client, call string }

// callAccounts follows every call through its invokes and outcomes in time
// order, and notes each blind retry (see [BlindRetry]): an invoke of a
// non-idempotent order that follows an unknown outcome for the same order,
// or an earlier attempt of it that reached the server and whose outcome
// the client never read.
func (a *accountant) callAccounts(hist []history.Record) ([]Call, []BlindRetry) {
	calls := map[callKey]*Call{}
	var order []*Call
	unknownAt := map[string]int{}       // order id to the line of its latest unknown
	unread := map[string]attempt{}      // order id to its latest attempt with no outcome read
	attempts := map[StreamKey]attempt{} // every attempt, by its stream
	var retries []BlindRetry
	for _, i := range timeOrder(hist) {
		h, line := &hist[i], i+1
		k := callKey{client: h.Client, call: h.Call}
		orderID := cmp.Or(h.OrderID, h.Call)
		key := StreamKey{Session: h.Session, RequestID: h.RequestID}
		switch {
		case h.Kind == history.KindInvoke:
			c := calls[k]
			if c == nil {
				c = &Call{Client: h.Client, ID: h.Call, OrderID: orderID, Tool: h.Tool, First: line, StartUS: h.TUS}
				calls[k] = c
				order = append(order, c)
			}
			c.Invokes++
			c.Outcome, c.Last, c.EndUS = "", line, 0
			if a.nonIdempotent(h.Tool, orderID) {
				r := BlindRetry{Client: h.Client, Call: h.Call, OrderID: orderID, Invoke: line}
				if u, ok := unknownAt[orderID]; ok {
					r.Unknown = u
					retries = append(retries, r)
				} else if p, ok := unread[orderID]; ok && a.started[p.key] != 0 {
					r.Prior, r.Started = p.line, a.started[p.key]
					retries = append(retries, r)
				}
			}
			at := attempt{line: line, key: key}
			unread[orderID], attempts[key] = at, at
		case h.Kind.IsOutcome():
			if c := calls[k]; c != nil {
				c.Outcome, c.Last, c.EndUS = h.Kind, line, h.TUS
			}
			if h.Kind == history.KindUnknown {
				unknownAt[orderID] = line
			}
			if h.Result == history.ResultRead && unread[orderID].key == key {
				delete(unread, orderID)
			}
		}
	}
	out := make([]Call, len(order))
	for i, c := range order {
		out[i] = *c
	}
	return out, retries
}

// attempt is one invoke of a call: its history line and its stream.
type attempt struct {
	line int
	key  StreamKey
}

// falseFails lists the calls whose last outcome is fail although their
// order's side effect was committed.
func (a *accountant) falseFails(calls []Call) []FalseFail {
	var out []FalseFail
	for _, c := range calls {
		if c.Outcome != history.KindFail {
			continue
		}
		if commits := a.committed[c.OrderID]; len(commits) > 0 {
			out = append(out, FalseFail{Client: c.Client, Call: c.ID, OrderID: c.OrderID, Line: c.Last, Commits: slices.Sorted(slices.Values(commits))})
		}
	}
	return out
}

// timeOrder returns the indexes of hist ordered by t_us, then position: the
// order [Account] reads a history in.
func timeOrder(hist []history.Record) []int {
	idx := make([]int, len(hist))
	sorted := true
	for i := range idx {
		idx[i] = i
		if i > 0 && hist[i].TUS < hist[i-1].TUS {
			sorted = false
		}
	}
	if !sorted {
		slices.SortStableFunc(idx, func(x, y int) int { return cmp.Compare(hist[x].TUS, hist[y].TUS) })
	}
	return idx
}

package check

import (
	"cmp"
	"slices"

	"github.com/chaosrun/chaosrun/targets/history"
)

type callKey struct{ client, call string }

// callAccounts follows every call through its invokes and outcomes in time
// order, and notes each invoke of a non-idempotent order that follows an
// unknown outcome for the same order.
func (a *accountant) callAccounts(hist []history.Record) ([]Call, []BlindRetry) {
	calls := map[callKey]*Call{}
	var order []*Call
	unknownAt := map[string]int{} // order id to the line of its latest unknown
	var retries []BlindRetry
	for _, i := range timeOrder(hist) {
		h, line := &hist[i], i+1
		k := callKey{client: h.Client, call: h.Call}
		orderID := cmp.Or(h.OrderID, h.Call)
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
			if u, ok := unknownAt[orderID]; ok && a.nonIdempotent(h.Tool, orderID) {
				retries = append(retries, BlindRetry{Client: h.Client, Call: h.Call, OrderID: orderID, Unknown: u, Invoke: line})
			}
		case h.Kind.IsOutcome():
			if c := calls[k]; c != nil {
				c.Outcome, c.Last, c.EndUS = h.Kind, line, h.TUS
			}
			if h.Kind == history.KindUnknown {
				unknownAt[orderID] = line
			}
		}
	}
	out := make([]Call, len(order))
	for i, c := range order {
		out[i] = *c
	}
	return out, retries
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

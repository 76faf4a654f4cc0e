package wire

import "github.com/chaosrun/chaosrun/wire/mcp"

// ExchangeKey names one HTTP exchange: request X of connection Conn at one
// edge, with the records of its response, events and end.
type ExchangeKey struct {
	Edge Edge
	Conn int64
	X    int64
}

// ExchangeKey returns the key of the exchange r belongs to; its X is 0 for
// a record of no exchange (open, close).
func (r *Record) ExchangeKey() ExchangeKey {
	return ExchangeKey{Edge: r.Edge, Conn: r.Conn, X: r.Exchange}
}

// Exchange is one HTTP exchange as the records of its edge have shown it
// so far.
type Exchange struct {
	Key ExchangeKey
	// Requested says its request's record arrived: record N at TUS, a
	// request with Method. The response's records can come first: the
	// observer records the two directions of a connection from two
	// goroutines, and waits for the request only so long (see
	// wire/observer's pairing).
	Requested bool
	N, TUS    int64
	Method    string
	// Answered says its response's record arrived, with Status and
	// ContentType; SSE says the response's body is an event stream, read
	// as one by the observer (its events follow as event records).
	Answered    bool
	Status      int
	ContentType string
	SSE         bool
	// Ended says a record of its end arrived, at EndUS: the body_end of a
	// streamed body, or the close of its connection. A body that is not a
	// stream passes whole with its response's record and has no end of its
	// own (see [Exchange.Done]).
	Ended bool
	EndUS int64
}

// Done reports whether nothing more of the exchange will cross: it ended,
// or it was answered with a body that is not a stream.
func (x *Exchange) Done() bool { return x.Ended || x.Answered && !x.SSE }

// Exchanges pairs the records of an edge (or of both) into HTTP exchanges,
// keyed by (edge, conn, x), from whichever of an exchange's records comes
// first. The trigger engine follows the records with it as they are
// written, and the checker as it reads a file; each keeps its own state of
// an exchange beside it, by its key. The zero value is ready to use; it is
// not safe for concurrent use.
//
// An exchange is kept until the close of its connection, which ends it,
// or until [Exchanges.Forget]: a caller that runs as long as the traffic
// does forgets each exchange it is done with, and so keeps only those in
// flight. The exchanges it returned stay valid after either.
type Exchanges struct {
	open  map[ExchangeKey]*Exchange
	conns map[connKey][]*Exchange // the open exchanges of each connection
}

type connKey struct {
	edge Edge
	conn int64
}

// Observe follows record r and returns the exchange it belongs to, updated
// with r, or nil for a record of no exchange. A close record ends every
// exchange of its connection not ended yet, at its time, and forgets them.
func (s *Exchanges) Observe(r *Record) *Exchange {
	if r.Kind == KindClose {
		s.close(r)
		return nil
	}
	if r.Exchange == 0 {
		return nil
	}
	x := s.exchange(r.ExchangeKey())
	switch r.Kind {
	case KindRequest:
		x.Requested, x.N, x.TUS, x.Method = true, r.N, r.TUS, r.Method
	case KindResponse:
		x.Answered, x.Status = true, r.Status
		if r.Header != nil {
			x.ContentType = r.Header.ContentType
			x.SSE = mcp.HasMediaType(x.ContentType, mcp.ContentTypeSSE)
		}
	case KindBodyEnd:
		if !x.Ended {
			x.Ended, x.EndUS = true, r.TUS
		}
	}
	return x
}

// Forget drops exchange x: a later record of its key starts a new one.
func (s *Exchanges) Forget(x *Exchange) {
	if s.open[x.Key] != x {
		return
	}
	delete(s.open, x.Key)
	c := connKey{x.Key.Edge, x.Key.Conn}
	for i, y := range s.conns[c] {
		if y == x {
			s.conns[c] = append(s.conns[c][:i], s.conns[c][i+1:]...)
			break
		}
	}
	if len(s.conns[c]) == 0 {
		delete(s.conns, c)
	}
}

// exchange returns the exchange of key k, starting it if it is new.
func (s *Exchanges) exchange(k ExchangeKey) *Exchange {
	if x := s.open[k]; x != nil {
		return x
	}
	if s.open == nil {
		s.open, s.conns = map[ExchangeKey]*Exchange{}, map[connKey][]*Exchange{}
	}
	x := &Exchange{Key: k}
	s.open[k] = x
	c := connKey{k.Edge, k.Conn}
	s.conns[c] = append(s.conns[c], x)
	return x
}

// close ends and forgets the exchanges of r's connection.
func (s *Exchanges) close(r *Record) {
	c := connKey{r.Edge, r.Conn}
	for _, x := range s.conns[c] {
		if !x.Ended {
			x.Ended, x.EndUS = true, r.TUS
		}
		delete(s.open, x.Key)
	}
	delete(s.conns, c)
}

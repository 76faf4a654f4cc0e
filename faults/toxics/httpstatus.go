package toxics

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/Shopify/toxiproxy/v2/stream"
	"github.com/Shopify/toxiproxy/v2/toxics"
)

// HTTPStatusGate is the upstream half of an HTTP status answer: on each
// connection it inspects the first chunk it sees and, when that chunk
// begins an HTTP/1.x request line and the budget allows, swallows the
// request and closes the upstream half so the server never sees it. Count
// is the budget: the number of requests to swallow in all, across
// connections; 0 swallows every request while the gate is installed. The
// downstream [HTTPStatus] half writes the answer.
type HTTPStatusGate struct {
	Count int64 `json:"count"`

	taken atomic.Int64 // requests swallowed so far, shared by all connections
}

type gateState struct {
	decided bool // the first chunk has been seen and the connection judged
}

// NewState starts a connection undecided.
func (t *HTTPStatusGate) NewState() any { return new(gateState) }

// Pipe swallows the connection's request or passes the connection through.
func (t *HTTPStatusGate) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*gateState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if !st.decided {
				st.decided = true
				if IsRequestLine(c.Data) && t.take() {
					discard(stub)
					return
				}
			}
			stub.Output <- c
		}
	}
}

// take spends one request of the budget, if any is left.
func (t *HTTPStatusGate) take() bool {
	if t.Count <= 0 {
		t.taken.Add(1)
		return true
	}
	for {
		n := t.taken.Load()
		if n >= t.Count {
			return false
		}
		if t.taken.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// methods are the request methods the gate recognises, each with the space
// that ends it on a request line.
var methods = [][]byte{
	[]byte("GET "), []byte("POST "), []byte("DELETE "), []byte("PUT "), []byte("PATCH "),
	[]byte("HEAD "), []byte("OPTIONS "), []byte("TRACE "), []byte("CONNECT "),
}

// IsRequestLine reports whether b begins an HTTP/1.x request line: a known
// method, a space, and a request target that does not start with a space.
// HTTP/2's connection preface ("PRI * HTTP/2.0") is not one.
func IsRequestLine(b []byte) bool {
	for _, m := range methods {
		if bytes.HasPrefix(b, m) {
			rest := b[len(m):]
			return len(rest) > 0 && rest[0] != ' ' && rest[0] != '\r' && rest[0] != '\n'
		}
	}
	return false
}

// HTTPStatus is the downstream half of an HTTP status answer: it passes the
// server's bytes on and, when its stream ends before the server sent any
// byte since the toxic started on the connection, answers with Status (a
// complete HTTP/1.1 response with a small JSON body and Connection: close)
// and closes the connection. Install it before its [HTTPStatusGate].
type HTTPStatus struct {
	Status int `json:"status"`
}

type answerState struct {
	served bool // the server sent at least one byte
}

// NewState starts a connection on which the server has sent nothing.
func (t *HTTPStatus) NewState() any { return new(answerState) }

// Pipe passes the server's bytes on and answers a connection the server
// never wrote to.
func (t *HTTPStatus) Pipe(stub *toxics.ToxicStub) {
	st := stub.State.(*answerState)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				if !st.served {
					stub.Output <- &stream.StreamChunk{Data: StatusResponse(t.Status), Timestamp: time.Now()}
				}
				stub.Close()
				return
			}
			st.served = true
			stub.Output <- c
		}
	}
}

// StatusResponse is the response the answer half writes for status: the
// status line with the standard reason phrase, a JSON body naming the
// status, Content-Length and Connection: close.
func StatusResponse(status int) []byte {
	reason := http.StatusText(status)
	if reason == "" {
		reason = fmt.Sprintf("Status %d", status)
	}
	code := strings.ReplaceAll(strings.ToLower(reason), " ", "_")
	body := fmt.Sprintf(`{"error":%q,"status":%d}`, code, status)
	return fmt.Appendf(nil, "HTTP/1.1 %03d %s\r\nContent-Type: application/json\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", status, reason, len(body), body)
}

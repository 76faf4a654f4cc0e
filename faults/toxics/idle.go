package toxics

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// IdleTimeout closes the connection once Idle milliseconds have passed with
// no chunk on its stream (install it downstream: no byte from the server to
// the client). The timer starts when the toxic starts on the connection and
// restarts on every chunk; an Idle of 0 or less never fires. Whether the
// close is a FIN or an RST depends on the connection's linger (see the
// package documentation).
type IdleTimeout struct {
	Idle int64 `json:"idle"`
}

// deadlineState is the per-connection instant at which a toxic closes the
// connection. It survives interrupts, so re-running Pipe (when another
// toxic is added or removed) does not restart the timer.
type deadlineState struct {
	at time.Time
}

// NewState starts the idle timer of one connection.
func (t *IdleTimeout) NewState() any {
	return &deadlineState{at: time.Now().Add(millis(t.Idle))}
}

// Pipe passes chunks on and closes the connection when the stream has been
// idle for too long.
func (t *IdleTimeout) Pipe(stub *toxics.ToxicStub) {
	idle := millis(t.Idle)
	if idle <= 0 {
		passOn(stub)
		return
	}
	st := stub.State.(*deadlineState)
	pipeUntil(stub, st, func() { st.at = time.Now().Add(idle) })
}

// Cut closes the connection After milliseconds after the toxic starts on it
// (0: at once), whether or not bytes flow. A chunk that arrives as the
// connection is cut is dropped.
type Cut struct {
	After int64 `json:"after"`
}

// NewState fixes the instant the connection is cut.
func (t *Cut) NewState() any {
	return &deadlineState{at: time.Now().Add(millis(t.After))}
}

// Pipe passes chunks on until the connection's deadline, then closes it.
func (t *Cut) Pipe(stub *toxics.ToxicStub) {
	pipeUntil(stub, stub.State.(*deadlineState), nil)
}

// pipeUntil passes chunks on until st.at, then closes the connection and
// discards the rest of its input. touch, when set, runs on every chunk and
// may move st.at.
func pipeUntil(stub *toxics.ToxicStub, st *deadlineState, touch func()) {
	if !time.Now().Before(st.at) {
		discard(stub)
		return
	}
	timer := time.NewTimer(time.Until(st.at))
	defer timer.Stop()
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if touch != nil {
				touch()
				timer.Reset(time.Until(st.at))
			}
			stub.Output <- c
		case <-timer.C:
			discard(stub)
			return
		}
	}
}

// passOn is the no-op toxic's loop.
func passOn(stub *toxics.ToxicStub) {
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			stub.Output <- c
		}
	}
}

package toxics

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// Type names under which [Register] adds the toxics, and the name of
// Toxiproxy's own reset_peer toxic, whose presence makes closes RSTs.
const (
	TypeIdleTimeout    = "idle_timeout"
	TypeCut            = "cut"
	TypeStall          = "stall"
	TypeHTTPStatus     = "http_status"
	TypeHTTPStatusGate = "http_status_gate"
	ResetPeer          = "reset_peer"
)

// Register adds chaosrun's toxics to Toxiproxy's global toxic registry. It
// is safe to call more than once and from several goroutines.
func Register() {
	toxics.Register(TypeIdleTimeout, new(IdleTimeout))
	toxics.Register(TypeCut, new(Cut))
	toxics.Register(TypeStall, new(Stall))
	toxics.Register(TypeHTTPStatus, new(HTTPStatus))
	toxics.Register(TypeHTTPStatusGate, new(HTTPStatusGate))
}

func millis(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// discard closes the stub and then reads its input until the end of the
// stream, so the toxics before it and Toxiproxy's reader of the source
// connection are never left blocked on a send nobody receives. It does not
// watch Interrupt: once the stub is closed, Toxiproxy no longer interrupts
// it (InterruptToxic sees the stub closed).
func discard(stub *toxics.ToxicStub) {
	stub.Close()
	for range stub.Input {
	}
}

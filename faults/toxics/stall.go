package toxics

import "github.com/Shopify/toxiproxy/v2/toxics"

// Stall holds its stream: it reads nothing until it is removed. Bytes wait
// in the toxics before it and in the kernel's socket buffers, the sender is
// slowed by TCP back-pressure, and no connection is closed — not even when
// a peer closes its end, which the proxy learns only after the stall ends.
// Removing the toxic passes every held byte on, in order.
type Stall struct{}

// Pipe waits for the interrupt that comes with the toxic's removal (or an
// update of the chain) without touching the stream.
func (t *Stall) Pipe(stub *toxics.ToxicStub) {
	<-stub.Interrupt
}

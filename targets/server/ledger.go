package server

import (
	"github.com/chaosrun/chaosrun/sideeffects"
)

// record writes r to the ledger, stamped by the tool core's Ledger, within
// the server's life. A failure is logged there; nothing here acts on it,
// since an observation the ledger missed cannot be taken back.
func (s *Server) record(r sideeffects.Record) {
	_ = s.ledger.Record(s.life, r)
}

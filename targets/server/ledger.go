package server

import (
	"github.com/chaosrun/chaosrun/sideeffects"
)

// record stamps r (fresh id, time on the run's clock, source) and writes it
// to the ledger. A failure is logged and returned; only the charge tool acts
// on it, since an observation the ledger missed cannot be taken back.
func (s *Server) record(r sideeffects.Record) error {
	r.ID = sideeffects.NewID()
	r.TUS = s.cfg.Clock.Micros()
	r.Source = s.cfg.Source
	if err := s.cfg.Recorder.Record(s.life, r); err != nil {
		s.log.Warn("ledger record failed", "kind", r.Kind, "session", r.Session, "request", r.RequestID, "err", err)
		return err
	}
	return nil
}

package harness

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/jsonl"
)

// SamplesFile holds, where the runtime samples its agents (the local
// runtime does), what each server replica held while the experiment ran:
// one agent.Sample per replica per SampleEvery, JSON lines in the order
// taken. A replica that is not running at a tick (crashed, restarting) has
// no line for it.
const SamplesFile = "samples.jsonl"

// SampleEvery is how often the server replicas are sampled.
const SampleEvery = time.Second

// sampleServers samples the server replicas every SampleEvery into
// SamplesFile until the returned stop is called (stop takes one last
// sample, then waits for the writer). On a runtime that does not sample,
// it writes nothing.
func (e *experiment) sampleServers(ctx context.Context) (stop func() error) {
	var sampled []agent.Sampled
	var names []string
	for k, r := range e.replicas {
		if s, ok := r.(agent.Sampled); ok {
			sampled = append(sampled, s)
			names = append(names, replicaName(k+1, len(e.replicas)))
		}
	}
	if len(sampled) == 0 {
		return func() error { return nil }
	}
	f, err := os.Create(filepath.Join(e.dir, SamplesFile))
	if err != nil {
		return func() error { return err }
	}
	enc := json.NewEncoder(f)
	take := func() error {
		for i, s := range sampled {
			x, err := s.Sample()
			if errors.Is(err, agent.ErrNotRunning) {
				continue
			}
			if err != nil {
				return err
			}
			x.Agent, x.TUS = names[i], e.clock.Micros()
			if err := enc.Encode(x); err != nil {
				return err
			}
		}
		return nil
	}
	done := make(chan struct{})
	var werr error
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(SampleEvery)
		defer t.Stop()
		werr = take()
		for werr == nil {
			select {
			case <-done:
				werr = take()
				return
			case <-ctx.Done():
				return
			case <-t.C:
				werr = take()
			}
		}
	})
	var once sync.Once
	return func() error {
		once.Do(func() {
			close(done)
			wg.Wait()
			if err := f.Close(); werr == nil {
				werr = err
			}
		})
		return werr
	}
}

// ReadSamples reads a samples file under the one JSON-lines rule (a torn
// last line is dropped; any other bad line is an error naming it).
func ReadSamples(r io.Reader) ([]agent.Sample, error) {
	return jsonl.Read(r, 1<<16, func(b []byte) (agent.Sample, error) {
		var s agent.Sample
		err := json.Unmarshal(b, &s)
		return s, err
	})
}

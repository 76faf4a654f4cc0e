package roles

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/chaosrun/chaosrun/harness/agent"
	"github.com/chaosrun/chaosrun/internal/exitcode"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/workload"
	"github.com/spf13/cobra"
)

// ServerConfig is what the runner tells a server agent, in the agent's
// configuration file (agent.ConfigFile): the target and its options at run
// scale, in the options type the target declares, and what the runner
// provides besides them.
type ServerConfig struct {
	Target string `json:"target"`
	// Tasks is the tasks mode the server runs (server.tasks).
	Tasks string `json:"tasks,omitempty"`
	// Protocol is the revision the experiment's clients speak: a server
	// that serves one way per revision (go-sdk, stateless at 2026-07-28)
	// is started that way.
	Protocol string          `json:"protocol,omitempty"`
	Options  targets.Options `json:"options"`
	// Redis is the address of the Redis server a store kept in it uses,
	// and Owner the replica's stable name in it.
	Redis string `json:"redis,omitempty"`
	Owner string `json:"owner,omitempty"`
}

// UnmarshalJSON decodes the options into the type the target declares,
// strictly: a setting the type lacks is an error.
func (c *ServerConfig) UnmarshalJSON(b []byte) error {
	type plain ServerConfig
	var v struct {
		plain
		Options json.RawMessage `json:"options"`
	}
	if err := strict(b, &v); err != nil {
		return err
	}
	*c = ServerConfig(v.plain)
	s, ok := catalog.Server(c.Target)
	if !ok {
		return fmt.Errorf("target: unknown server target %q", c.Target)
	}
	opts, err := decodeOptions(s.Options, v.Options)
	c.Options = opts
	return err
}

// ClientConfig is what the runner tells a client agent: the target and
// its options at run scale, the endpoint through each proxy agent, and the
// workload.
type ClientConfig struct {
	Target   string          `json:"target"`
	Protocol string          `json:"protocol,omitempty"`
	Tasks    string          `json:"tasks,omitempty"`
	Options  targets.Options `json:"options"`
	// Endpoints are the MCP endpoint through each proxy agent: client i
	// uses the (i mod n)-th.
	Endpoints []string `json:"endpoints"`
	// Seed seeds the clients' randomness (the backoff's jitter).
	Seed     int64             `json:"seed"`
	Workload workload.Template `json:"workload"`
}

// UnmarshalJSON decodes the options into the type the target declares.
func (c *ClientConfig) UnmarshalJSON(b []byte) error {
	type plain ClientConfig
	var v struct {
		plain
		Options json.RawMessage `json:"options"`
	}
	if err := strict(b, &v); err != nil {
		return err
	}
	*c = ClientConfig(v.plain)
	d, ok := catalog.Client(c.Target)
	if !ok {
		return fmt.Errorf("target: unknown client target %q", c.Target)
	}
	opts, err := decodeOptions(d.Options, v.Options)
	c.Options = opts
	return err
}

// decodeOptions decodes raw over new options of a target and validates
// them; absent options are the target's defaults.
func decodeOptions(newOptions func() targets.Options, raw json.RawMessage) (targets.Options, error) {
	opts := newOptions()
	if len(raw) > 0 && !bytes.Equal(raw, []byte("null")) {
		if err := strict(raw, opts); err != nil {
			return nil, fmt.Errorf("options: %w", err)
		}
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("options: %w", err)
	}
	return opts, nil
}

// strict decodes JSON, refusing a field v lacks.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

// registerConfig adds --config, which defaults to the file the runtime
// puts in the agent's state folder.
func (f *agentFlags) registerConfig(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.config, "config", agent.ConfigFile, "the agent's configuration as the runner writes it (JSON; relative to --state)")
}

// readConfig reads the agent's configuration file (--config, relative to
// the state folder) into v, and reports whether there was one.
func (f *agentFlags) readConfig(v any) (bool, error) {
	path := f.path(f.config)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, exitcode.With(exitcode.Harness, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, exitcode.With(exitcode.Invalid, fmt.Errorf("%s: %w", path, err))
	}
	return true, nil
}

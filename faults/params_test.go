package faults_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"

	"github.com/chaosrun/chaosrun/faults"
)

func TestKindsAreStable(t *testing.T) {
	assert.Equal(t, []string{
		"bandwidth", "crash", "drop_tasks", "expire_session", "http_status", "idle_timeout", "latency", "limit_data",
		"partition", "pause", "reset", "restart", "slicer", "terminate_session",
	}, faults.Kinds())
	for _, k := range faults.Kinds() {
		p, err := faults.NewParams(k)
		require.NoError(t, err, k)
		require.NotNil(t, p, k)
	}
	_, err := faults.NewParams("earthquake")
	require.ErrorIs(t, err, faults.ErrUnknownKind)
	assert.ErrorContains(t, err, "idle_timeout", "the message lists the known kinds")
}

// decode reads a params mapping the way the experiment loader does: into
// the kind's zero params, rejecting unknown keys.
func decode(t *testing.T, kind, src string) (faults.Params, error) {
	t.Helper()
	p, err := faults.NewParams(kind)
	require.NoError(t, err)
	if src == "" {
		return p, nil
	}
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	return p, dec.Decode(p)
}

func TestValidate(t *testing.T) {
	cases := []struct {
		kind, params string
		err          string // prefix of the validation message; "" for valid
	}{
		{"idle_timeout", "{idle: 60s, close: reset}", ""},
		{"idle_timeout", "{idle: 60s, close: fin, for: 5m}", ""},
		{"idle_timeout", "{close: fin}", "idle: must be positive"},
		{"idle_timeout", "", "idle: must be positive"},
		{"idle_timeout", "{idle: 60s}", "close: must be fin or reset"},
		{"idle_timeout", "{idle: 60s, close: rst}", "close: must be fin or reset"},
		{"idle_timeout", "{idle: 60s, close: fin, for: 30s}", "for: must exceed idle"},
		{"reset", "", ""},
		{"reset", "{after: 2s, for: 1m}", ""},
		{"reset", "{after: 2s, for: 1s}", "for: must exceed after"},
		{"latency", "{latency: 100ms, jitter: 20ms, stream: upstream}", ""},
		{"latency", "{latency: 0s}", "latency: must be positive"},
		{"latency", "{latency: 100ms, jitter: 1s}", "jitter: must be between"},
		{"latency", "{latency: 100ms, stream: sideways}", "stream: must be upstream or downstream"},
		{"bandwidth", "{rate: 64}", ""},
		{"bandwidth", "{rate: 0}", "rate: must be"},
		{"slicer", "{average_size: 64, size_variation: 32, delay: 10ms}", ""},
		{"slicer", "{average_size: 0}", "average_size: must be"},
		{"slicer", "{average_size: 64, size_variation: 64}", "size_variation: must be"},
		{"limit_data", "{bytes: 1024}", ""},
		{"limit_data", "{bytes: -1}", "bytes: must be positive"},
		{"partition", "{for: 4m, mode: blackhole}", ""},
		{"partition", "{for: 4m, mode: refuse}", ""},
		{"partition", "{mode: refuse}", "for: must be positive"},
		{"partition", "{for: 4m}", "mode: must be refuse or blackhole"},
		{"http_status", "{status: 503, count: 3, for: 30s}", ""},
		{"http_status", "{status: 503}", ""},
		{"http_status", "{status: 200}", "status: must be an HTTP status from 400 to 599"},
		{"http_status", "{status: 503, count: -1}", "count: must not be negative"},
		{"restart", "{role: server, graceful: true}", ""},
		{"restart", "{role: proxy}", "role: must be one of server, client, ledger"},
		{"crash", "{role: client}", ""},
		{"crash", "", "role: must be"},
		{"pause", "{role: server, for: 10s}", ""},
		{"crash", "{role: server, replica: 3, down: 30s}", ""},
		{"crash", "{role: server, replica: 0}", ""},
		{"crash", "{role: server, replica: -1}", "replica: must be 1 or more"},
		{"crash", "{role: client, replica: 2}", "replica: only the server has replicas, not the client"},
		{"restart", "{role: ledger, replica: 1}", "replica: only the server has replicas"},
		{"pause", "{role: server, replica: 2, for: 10s}", ""},
		{"pause", "{role: server}", "for: must be positive"},
		{"expire_session", "", ""},
		{"terminate_session", "{}", ""},
	}
	for _, tc := range cases {
		t.Run(tc.kind+" "+tc.params, func(t *testing.T) {
			p, err := decode(t, tc.kind, tc.params)
			require.NoError(t, err)
			err = p.Validate()
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.err), "got %q, want prefix %q", err, tc.err)
		})
	}
}

func TestParamsRejectUnknownKeys(t *testing.T) {
	_, err := decode(t, "idle_timeout", "{idle: 60s, close: fin, timeout: 1s}")
	require.ErrorContains(t, err, "timeout")
	_, err = decode(t, "expire_session", "{session: abc}")
	require.Error(t, err)
}

func TestParamsJSONRoundTrip(t *testing.T) {
	p, err := decode(t, "idle_timeout", "{idle: 60s, close: reset, for: 10m}")
	require.NoError(t, err)
	b, err := json.Marshal(p)
	require.NoError(t, err)
	assert.JSONEq(t, `{"idle":"1m0s","close":"reset","for":"10m0s"}`, string(b))
	q, err := faults.NewParams("idle_timeout")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, q))
	assert.Equal(t, p, q)
}

// FuzzParamsJSON feeds arbitrary JSON to every kind's params: decoding and
// validation never panic, and valid params survive a JSON round trip.
func FuzzParamsJSON(f *testing.F) {
	f.Add(0, []byte(`{"idle":"60s","close":"reset"}`))
	f.Add(6, []byte(`{"for":"4m","mode":"blackhole"}`))
	f.Add(7, []byte(`{"status":503,"count":2}`))
	f.Add(3, []byte(`{"average_size":-1,"size_variation":9223372036854775807}`))
	kinds := faults.Kinds()
	f.Fuzz(func(t *testing.T, k int, b []byte) {
		kind := kinds[uint(k)%uint(len(kinds))]
		p, _ := faults.NewParams(kind)
		if json.Unmarshal(b, p) != nil || p.Validate() != nil {
			return
		}
		out, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: marshal valid params: %v", kind, err)
		}
		q, _ := faults.NewParams(kind)
		if err := json.Unmarshal(out, q); err != nil {
			t.Fatalf("%s: %s does not decode again: %v", kind, out, err)
		}
		if err := q.Validate(); err != nil {
			t.Fatalf("%s: %s no longer valid: %v", kind, out, err)
		}
	})
}

// TestKindsSayWhatTheyNeed: what a loader and a runner ask of each kind,
// through the optional interfaces, instead of knowing kinds.
func TestKindsSayWhatTheyNeed(t *testing.T) {
	tests := []struct {
		params  faults.Params
		target  *faults.Target
		control *faults.Control
		reset   bool
	}{
		{&faults.Restart{Role: "server", Replica: 2}, &faults.Target{Role: "server", Replica: 2, Stops: true, Kills: true}, nil, false},
		{&faults.Restart{Role: "server", Graceful: true}, &faults.Target{Role: "server", Stops: true}, nil, false},
		{&faults.Crash{Role: "redis"}, &faults.Target{Role: "redis", Stops: true, Kills: true}, nil, false},
		{&faults.Pause{Role: "client"}, &faults.Target{Role: "client", Freezes: true}, nil, false},
		{&faults.ExpireSession{}, nil, &faults.Control{Action: "expire", Sessions: true}, false},
		{&faults.TerminateSession{}, nil, &faults.Control{Action: "terminate", Sessions: true}, false},
		{&faults.DropTasks{}, nil, &faults.Control{Action: "drop_tasks", Tasks: true}, false},
		{&faults.Reset{}, nil, nil, true},
		{&faults.IdleTimeout{Close: faults.CloseReset}, nil, nil, true},
		{&faults.IdleTimeout{Close: faults.CloseFIN}, nil, nil, false},
		{&faults.Partition{}, nil, nil, false},
		{&faults.HTTPStatus{}, nil, nil, false},
	}
	for _, tc := range tests {
		t.Run(strings.TrimPrefix(fmt.Sprintf("%T", tc.params), "*faults."), func(t *testing.T) {
			var target *faults.Target
			if tg, ok := tc.params.(faults.Targeted); ok {
				target = new(tg.Target())
			}
			assert.Equal(t, tc.target, target)
			var control *faults.Control
			if c, ok := tc.params.(faults.Controlled); ok {
				control = new(c.Control())
			}
			assert.Equal(t, tc.control, control)
			r, ok := tc.params.(faults.Resetting)
			assert.Equal(t, tc.reset, ok && r.ClosesByReset())
		})
	}
	assert.Equal(t, "server-2", faults.Target{Role: "server", Replica: 2}.Name())
	assert.Equal(t, "redis", faults.Target{Role: "redis"}.Name())
}

package faults_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/internal/dur"
)

func params(t *testing.T, kind, src string) faults.Params {
	t.Helper()
	p, err := decode(t, kind, src)
	require.NoError(t, err)
	require.NoError(t, p.Validate())
	return p
}

func TestPlanScalesOffsetsAndWindows(t *testing.T) {
	specs := []faults.Spec{
		{Kind: "partition", At: dur.Duration(2 * time.Minute), Params: params(t, "partition", "{for: 4m, mode: blackhole}")},
		{Kind: "idle_timeout", At: 0, Params: params(t, "idle_timeout", "{idle: 60s, close: reset}")},
		{Kind: "crash", At: dur.Duration(time.Minute), Params: params(t, "crash", "{role: client}"),
			Repeat: &faults.Repeat{Every: dur.Duration(30 * time.Second), Count: 3}},
		{Kind: "reset", At: dur.Duration(time.Minute), Params: params(t, "reset", "{after: 10s}")},
		{Kind: "reset", At: dur.Duration(time.Minute), Params: params(t, "reset", "{after: 10s, for: 1m}")},
	}
	plan := faults.Plan(specs, 0.05, 7)
	type row struct {
		kind                string
		index, repeat       int
		at, window, holdFor time.Duration
	}
	var got []row
	for _, in := range plan {
		got = append(got, row{in.Kind, in.Index, in.Repeat, in.At, in.Window, in.Hold})
		assert.Same(t, specs[in.Index].Params, in.Written, "the params as written ride along, for the log")
	}
	assert.Equal(t, []row{
		{"idle_timeout", 1, 0, 0, 3 * time.Second, 0},
		{"crash", 2, 0, 3 * time.Second, 0, 0},
		{"reset", 4, 0, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		{"reset", 3, 0, 3500 * time.Millisecond, 0, 0},
		{"crash", 2, 1, 4500 * time.Millisecond, 0, 0},
		{"partition", 0, 0, 6 * time.Second, 12 * time.Second, 12 * time.Second},
		{"crash", 2, 2, 6 * time.Second, 0, 0},
	}, got, "sorted by time, every duration scaled, a one-shot reset at its time plus after")
}

func TestPlanScalesEveryDurationParameterAndNothingElse(t *testing.T) {
	cases := []struct {
		kind, params string
		want         faults.Params // at scale 0.05
	}{
		{"idle_timeout", "{idle: 60s, close: reset, for: 10m}",
			&faults.IdleTimeout{Idle: dur.Duration(3 * time.Second), Close: "reset", For: dur.Duration(30 * time.Second)}},
		{"reset", "{after: 10s, for: 1m}", &faults.Reset{After: dur.Duration(500 * time.Millisecond), For: dur.Duration(3 * time.Second)}},
		{"latency", "{latency: 2s, jitter: 1s, stream: upstream}",
			&faults.Latency{Latency: dur.Duration(100 * time.Millisecond), Jitter: dur.Duration(50 * time.Millisecond), Stream: "upstream"}},
		{"bandwidth", "{rate: 64, for: 1m}", &faults.Bandwidth{Rate: 64, For: dur.Duration(3 * time.Second)}},
		{"slicer", "{average_size: 64, size_variation: 8, delay: 10ms}",
			&faults.Slicer{AverageSize: 64, SizeVariation: 8, Delay: dur.Duration(500 * time.Microsecond)}},
		{"limit_data", "{bytes: 4096, for: 20s}", &faults.LimitData{Bytes: 4096, For: dur.Duration(time.Second)}},
		{"partition", "{for: 4m, mode: refuse}", &faults.Partition{For: dur.Duration(12 * time.Second), Mode: "refuse"}},
		{"http_status", "{status: 503, count: 3, for: 1m}", &faults.HTTPStatus{Status: 503, Count: 3, For: dur.Duration(3 * time.Second)}},
		{"restart", "{role: server, graceful: true}", &faults.Restart{Role: "server", Graceful: true}},
		{"pause", "{role: ledger, for: 20s}", &faults.Pause{Role: "ledger", For: dur.Duration(time.Second)}},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			written := params(t, tc.kind, tc.params)
			before := params(t, tc.kind, tc.params)
			plan := faults.Plan([]faults.Spec{{Kind: tc.kind, Params: written}}, 0.05, 1)
			require.Len(t, plan, 1)
			assert.Equal(t, tc.want, plan[0].Params, "durations scaled; counts, sizes, rates and names as written")
			assert.Equal(t, before, written, "the spec's own params are left at real-world scale")
			assert.Same(t, written, plan[0].Written)
		})
	}
}

func TestPlanJitterIsSeeded(t *testing.T) {
	reset := params(t, "reset", "")
	spec := faults.Spec{Kind: "reset", At: dur.Duration(time.Second), Params: reset,
		Repeat: &faults.Repeat{Every: dur.Duration(10 * time.Second), Count: 20, Jitter: dur.Duration(5 * time.Second)}}
	other := faults.Spec{Kind: "reset", Params: reset,
		Repeat: &faults.Repeat{Every: dur.Duration(time.Second), Count: 5, Jitter: dur.Duration(time.Second)}}

	a := faults.Plan([]faults.Spec{spec}, 1, 42)
	b := faults.Plan([]faults.Spec{spec}, 1, 42)
	c := faults.Plan([]faults.Spec{spec}, 1, 43)
	require.Len(t, a, 20)
	assert.Equal(t, a, b, "the same seed gives the same schedule")
	assert.NotEqual(t, a, c, "another seed gives another schedule")
	for k, in := range a {
		nominal := time.Second + time.Duration(k)*10*time.Second
		assert.GreaterOrEqual(t, in.At, nominal, "repeat %d", k)
		assert.LessOrEqual(t, in.At, nominal+5*time.Second, "repeat %d", k)
	}

	withOther := faults.Plan([]faults.Spec{spec, other}, 1, 42)
	var mine []faults.Injection
	for _, in := range withOther {
		if in.Index == 0 {
			mine = append(mine, in)
		}
	}
	assert.Equal(t, a, mine, "adding a fault leaves the jitter of the others alone")
}

func TestPlanDefaults(t *testing.T) {
	plan := faults.Plan([]faults.Spec{
		{Kind: "expire_session", At: dur.Duration(time.Second)},
		{Kind: "no_such_kind"},
	}, 0, 1)
	require.Len(t, plan, 2)
	assert.Nil(t, plan[0].Params, "an unknown kind has no params; Run reports it")
	assert.Equal(t, "no_such_kind", plan[0].Kind)
	assert.IsType(t, &faults.ExpireSession{}, plan[1].Params, "absent params are the kind's zero params")
	assert.Equal(t, time.Second, plan[1].At, "a non-positive time scale counts as 1")
}

func TestRepeatValidate(t *testing.T) {
	cases := []struct {
		r   faults.Repeat
		err string
	}{
		{faults.Repeat{Every: dur.Duration(time.Second), Count: 3}, ""},
		{faults.Repeat{Every: dur.Duration(time.Second), Count: 0}, "count: must be between"},
		{faults.Repeat{Every: dur.Duration(time.Second), Count: faults.MaxRepeat + 1}, "count: must be between"},
		{faults.Repeat{Count: 2}, "every: must be positive"},
		{faults.Repeat{Every: dur.Duration(time.Second), Count: 2, Jitter: dur.Duration(2 * time.Second)}, "jitter: must be between"},
	}
	for _, tc := range cases {
		err := tc.r.Validate()
		if tc.err == "" {
			assert.NoError(t, err)
			continue
		}
		assert.ErrorContains(t, err, tc.err)
	}
}

package dur

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"90s", 90 * time.Second, ""},
		{"4m", 4 * time.Minute, ""},
		{"0", 0, ""},
		{"0s", 0, ""},
		{"-1s", 0, "negative"},
		{"ninety", 0, "not a duration"},
		{"90", 0, "not a duration"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			d, err := Parse(tc.in)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, d.D())
		})
	}
}

func TestYAMLAndJSON(t *testing.T) {
	var v struct {
		Idle Duration `yaml:"idle" json:"idle"`
	}
	require.NoError(t, yaml.Unmarshal([]byte("idle: 60s\n"), &v))
	assert.Equal(t, 3*time.Second, v.Idle.Scale(0.05))
	b, err := json.Marshal(v)
	require.NoError(t, err)
	assert.JSONEq(t, `{"idle":"1m0s"}`, string(b))
	require.NoError(t, json.Unmarshal(b, &v))
	assert.Equal(t, time.Minute, v.Idle.D())
	require.Error(t, yaml.Unmarshal([]byte("idle: [1]\n"), &v))
}

func TestScaleAllReachesNestedStructs(t *testing.T) {
	type inner struct {
		Max   Duration
		Count int
	}
	type opts struct {
		TTL     Duration
		Backoff inner
		Plain   time.Duration // not a setting's duration: left alone
		Ptr     *inner        // shared with the original: not followed
		hidden  Duration
	}
	shared := &inner{Max: Duration(time.Second)}
	o := opts{TTL: Duration(time.Minute), Backoff: inner{Max: Duration(10 * time.Second), Count: 3}, Plain: time.Hour, Ptr: shared,
		hidden: Duration(time.Minute)}
	ScaleAll(&o, 0.5)
	assert.Equal(t, Duration(30*time.Second), o.TTL)
	assert.Equal(t, inner{Max: Duration(5 * time.Second), Count: 3}, o.Backoff)
	assert.Equal(t, time.Hour, o.Plain)
	assert.Equal(t, Duration(time.Second), shared.Max)
	assert.Equal(t, Duration(time.Minute), o.hidden, "unexported fields are not settings")
}

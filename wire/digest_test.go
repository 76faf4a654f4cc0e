package wire

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestArgsDigest(t *testing.T) {
	same := []string{`{"b":1,"a":"x"}`, ` { "a" : "\u0078", "b" : 1 } `, `{"a":"y","b":1,"a":"x"}`}
	want, err := ArgsDigest([]byte(same[0]))
	require.NoError(t, err)
	assert.Len(t, want, 64)
	for _, s := range same[1:] {
		got, err := ArgsDigest([]byte(s))
		require.NoError(t, err)
		assert.Equal(t, want, got, s)
	}
	for _, other := range []string{`{"b":1.0,"a":"x"}`, `{"b":1,"a":"X"}`, `[{"b":1,"a":"x"}]`} {
		got, err := ArgsDigest([]byte(other))
		require.NoError(t, err)
		assert.NotEqual(t, want, got, other)
	}
	for _, bad := range []string{``, `{`, `{} {}`} {
		_, err := ArgsDigest([]byte(bad))
		assert.Error(t, err, bad)
	}
}

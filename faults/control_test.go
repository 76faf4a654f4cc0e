package faults

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSessions(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{in: `{"sessions":["a","b"]}`, want: []string{"a", "b"}},
		{in: `{"sessions":[]}`, want: []string{}},
		{in: `{"sessions":[{"id":"a", "stream":1}]}`, want: []string{`{"id":"a","stream":1}`}},
		{in: `{}`, err: `no "sessions" list`},
		{in: `{"sessions":null}`, err: `no "sessions" list`},
		{in: `[]`, err: "not {"},
		{in: `{"sessions":"a"}`, err: "not {"},
		{in: ``, err: "not {"},
	}
	for _, tc := range cases {
		got, err := parseSessions([]byte(tc.in))
		if tc.err != "" {
			assert.ErrorContains(t, err, tc.err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
}

func TestSessionsDetail(t *testing.T) {
	assert.Equal(t, "no live session to act on", sessionsDetail("expired", nil))
	assert.Equal(t, "expired 1 session: a", sessionsDetail("expired", []string{"a"}))
	assert.Equal(t, "terminated 2 sessions: a, b", sessionsDetail("terminated", []string{"a", "b"}))
}

// FuzzParseSessions feeds arbitrary control answers: no panic, and an
// accepted answer yields one id per list element.
func FuzzParseSessions(f *testing.F) {
	f.Add([]byte(`{"sessions":["a","b"]}`))
	f.Add([]byte(`{"sessions":[1,{"x":[]},null]}`))
	f.Add([]byte(`{"sessions":`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseSessions(b)
		if err == nil && ids == nil {
			t.Fatalf("%q: accepted without a list", b)
		}
	})
}

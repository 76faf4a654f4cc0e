package field

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestErrorNamesItsField(t *testing.T) {
	assert.EqualError(t, Errorf("idle", "must be positive"), "idle: must be positive")
	assert.EqualError(t, &Error{Err: errors.New("bad")}, "bad", "no field, the message alone")
	inner := errors.New("inner")
	assert.ErrorIs(t, &Error{Field: "x", Err: inner}, inner)
}

func TestAllWalksJoinedErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []Error
	}{
		{"nil", nil, nil},
		{"one", Errorf("a", "x"), []Error{{Field: "a"}}},
		{"a plain error is on no field", errors.New("x"), []Error{{}}},
		{"joined, in order", errors.Join(Errorf("a", "x"), nil, errors.Join(Errorf("b", "y"), errors.New("z"))),
			[]Error{{Field: "a"}, {Field: "b"}, {}}},
		{"wrapped", fmtWrap(Errorf("c", "x")), []Error{{Field: "c"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := All(tc.err)
			require.Len(t, got, len(tc.want))
			for i, e := range got {
				assert.Equal(t, tc.want[i].Field, e.Field)
				assert.NotNil(t, e.Err)
			}
		})
	}
}

func fmtWrap(err error) error { return errors.Join(err) }

func TestInPlacesProblemsUnderAParent(t *testing.T) {
	assert.NoError(t, In("backoff", nil))
	err := In("backoff", errors.Join(Errorf("max", "too small"), errors.New("whole")))
	got := All(err)
	require.Len(t, got, 2)
	assert.Equal(t, "backoff.max", got[0].Field)
	assert.Equal(t, "backoff", got[1].Field)
	assert.EqualError(t, got[0], "backoff.max: too small")
}

func TestJoin(t *testing.T) {
	assert.Equal(t, "a.b", Join("a", "b"))
	assert.Equal(t, "a", Join("a", ""))
	assert.Equal(t, "b", Join("", "b"))
}

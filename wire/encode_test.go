package wire

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fill sets field i of the struct v points to (every exported field when i
// is -1) to a value other than its zero, with strings that need escaping.
func fill(v reflect.Value, i int) {
	t := v.Type()
	for j := range t.NumField() {
		f := v.Field(j)
		if !t.Field(j).IsExported() || (i >= 0 && i != j) {
			continue
		}
		switch f.Kind() {
		case reflect.String:
			f.SetString(fmt.Sprintf("%s <&> \"\\\n\t\b\f\x01 é \u2028 \xff", t.Field(j).Name))
		case reflect.Int, reflect.Int64:
			f.SetInt(-int64(j) - 1)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Pointer:
			switch f.Type().Elem().Kind() {
			case reflect.Float64:
				x := 1e-7 * float64(j+1)
				f.Set(reflect.ValueOf(&x))
			case reflect.Struct:
				f.Set(reflect.New(f.Type().Elem()))
				fill(f.Elem(), -1)
			}
		case reflect.Slice:
			if f.Type() == reflect.TypeFor[[]Message]() {
				f.Set(reflect.ValueOf([]Message{{}, {ID: "2"}}))
				fill(f.Index(0), -1)
			}
		}
	}
}

func assertMarshal(t *testing.T, r *Record) {
	t.Helper()
	want, err := json.Marshal(r)
	require.NoError(t, err)
	got, ok := appendRecord(nil, r)
	require.True(t, ok)
	assert.Equal(t, string(want), string(got))
}

// TestAppendRecordIsMarshal holds appendRecord to json.Marshal for every
// field of a record, a header and a message, each alone and all at once.
func TestAppendRecordIsMarshal(t *testing.T) {
	all := Record{}
	fill(reflect.ValueOf(&all).Elem(), -1)
	all.Messages[0].Args = nil
	assertMarshal(t, &all)
	assertMarshal(t, &Record{})
	assertMarshal(t, &Record{Header: &Header{}, Messages: []Message{{}}})
	for i := range reflect.TypeFor[Record]().NumField() {
		var r Record
		fill(reflect.ValueOf(&r).Elem(), i)
		if r.Messages != nil {
			r.Messages[0].Args = nil
		}
		assertMarshal(t, &r)
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[Header](), reflect.TypeFor[Message]()} {
		for i := range typ.NumField() {
			r := Record{Header: &Header{}, Messages: []Message{{}}}
			v := reflect.ValueOf(r.Header).Elem()
			if typ == reflect.TypeFor[Message]() {
				v = reflect.ValueOf(&r.Messages[0]).Elem()
			}
			fill(v, i)
			if len(r.Messages[0].Args) > 0 {
				continue // left to encoding/json: see TestAppendRecordLeavesSome
			}
			assertMarshal(t, &r)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -3, 1 << 53, 1<<53 - 1, -(1<<53 - 1), 1<<53 + 2, -2.5, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		assertMarshal(t, &Record{Messages: []Message{{Progress: &f}}})
	}
}

func TestAppendRecordLeavesSome(t *testing.T) {
	nan := math.NaN()
	for _, r := range []Record{
		{Messages: []Message{{Args: json.RawMessage(` {"a" : "<"} `)}}},
		{Messages: []Message{{Total: &nan}}},
	} {
		_, ok := appendRecord(nil, &r)
		assert.False(t, ok)
	}
}

func FuzzAppendRecord(f *testing.F) {
	f.Add([]byte(`{"n":1,"kind":"event","event_id":"<1>","messages":[{"progress":1e-9,"id":"\u2028"}],"header":{}}`), "a\xffb")
	f.Fuzz(func(t *testing.T, b []byte, s string) {
		var r Record
		if json.Unmarshal(b, &r) != nil {
			r = Record{}
		}
		r.Detail = s
		want, err := json.Marshal(&r)
		got, ok := appendRecord(nil, &r)
		if !ok {
			return
		}
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	})
}

func BenchmarkAppendRecord(b *testing.B) {
	r := Record{TUS: 123456789, Edge: EdgeServer, Conn: 3, Kind: KindEvent, Exchange: 2, EventID: "17", Size: 120,
		Messages: []Message{{Method: "notifications/progress", ProgressToken: "c1-1", Progress: float(5), Total: float(1000)}}}
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = appendRecord(buf[:0], &r)
		}
	})
	b.Run("marshal", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(&r)
		}
	})
}

package mcp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMessage(t *testing.T) {
	tests := []struct {
		name, body string
		kind       string // request, notification, response, or "" for an error
	}{
		{"request int id", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "request"},
		{"request string id", `{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{}}`, "request"},
		{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "notification"},
		{"result", `{"jsonrpc":"2.0","id":3,"result":{}}`, "response"},
		{"error", `{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"x"}}`, "response"},
		{"wrong version", `{"jsonrpc":"1.0","id":1,"method":"ping"}`, ""},
		{"no method no id", `{"jsonrpc":"2.0"}`, ""},
		{"float id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, ""},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, ""},
		{"result and error", `{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":""}}`, ""},
		{"response without either", `{"jsonrpc":"2.0","id":1}`, ""},
		{"request with result", `{"jsonrpc":"2.0","id":1,"method":"x","result":{}}`, ""},
		{"trailing data", `{"jsonrpc":"2.0","method":"x"} {}`, ""},
		{"not json", `hello`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMessage([]byte(tc.body))
			if tc.kind == "" {
				require.ErrorIs(t, err, ErrInvalidMessage)
				return
			}
			require.NoError(t, err)
			got := map[bool]string{true: tc.kind}[map[string]bool{
				"request": m.IsRequest(), "notification": m.IsNotification(), "response": m.IsResponse(),
			}[tc.kind]]
			assert.Equal(t, tc.kind, got)
		})
	}
}

func TestParseBodyBatch(t *testing.T) {
	msgs, batch, err := ParseBody([]byte(` [{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","id":"x","method":"b"}]`))
	require.NoError(t, err)
	assert.True(t, batch)
	require.Len(t, msgs, 2)
	assert.Equal(t, "x", msgs[1].IDString())

	_, _, err = ParseBody([]byte(`[]`))
	require.ErrorIs(t, err, ErrInvalidMessage)
	_, _, err = ParseBody([]byte(`[{"jsonrpc":"2.0"}]`))
	require.ErrorIs(t, err, ErrInvalidMessage)
}

func TestConstructorsRoundTrip(t *testing.T) {
	req, err := NewRequest(7, MethodToolsCall, CallParams{Name: ToolCharge})
	require.NoError(t, err)
	b, err := json.Marshal(req)
	require.NoError(t, err)
	back, err := ParseMessage(b)
	require.NoError(t, err)
	assert.True(t, back.IsRequest())
	assert.Equal(t, "7", back.IDString())

	e := NewError(nil, CodeParseError, "bad")
	b, err = json.Marshal(e)
	require.NoError(t, err)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}`, string(b))
}

func FuzzParseBody(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`,
		`[{"jsonrpc":"2.0","method":"a"}]`, `{"jsonrpc":"2.0","id":1,"result":null}`, `[`, ``, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, _, err := ParseBody(b)
		if err != nil {
			require.ErrorIs(t, err, ErrInvalidMessage)
			return
		}
		for _, m := range msgs {
			kinds := 0
			for _, k := range []bool{m.IsRequest(), m.IsNotification(), m.IsResponse()} {
				if k {
					kinds++
				}
			}
			require.Equal(t, 1, kinds, "a valid message is exactly one kind: %q", b)
		}
	})
}

func FuzzCallID(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/call"}`, `{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{}}`, `[`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		id := CallID(body)
		if id == "" {
			return
		}
		m, err := ParseMessage(body)
		require.NoError(t, err)
		require.Equal(t, MethodToolsCall, m.Method)
		require.True(t, m.IsRequest())
	})
}

func TestHeaderValueEncoding(t *testing.T) {
	tests := []struct{ value, header string }{
		{"us-west1", "us-west1"},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.header, EncodeHeaderValue(tc.value))
		got, ok := DecodeHeaderValue(tc.header)
		assert.True(t, ok)
		assert.Equal(t, tc.value, got)
	}
	for _, bad := range []string{"=?base64?!!!?=", "caf\xc3\xa9", "a\nb"} {
		_, ok := DecodeHeaderValue(bad)
		assert.False(t, ok, "%q", bad)
	}
}

func FuzzHeaderValue(f *testing.F) {
	f.Add("charge")
	f.Add("=?base64?SGVsbG8sIOS4lueVjA==?=")
	f.Add("=?base64??=")
	f.Add(" x")
	f.Fuzz(func(t *testing.T, v string) {
		dec, ok := DecodeHeaderValue(EncodeHeaderValue(v))
		if !ok || dec != v {
			t.Fatalf("round trip of %q: %q %v", v, dec, ok)
		}
		if d, ok := DecodeHeaderValue(v); ok {
			again, ok2 := DecodeHeaderValue(EncodeHeaderValue(d))
			if !ok2 || again != d {
				t.Fatalf("decoded %q does not round-trip", d)
			}
		}
	})
}

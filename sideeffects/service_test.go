package sideeffects

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newTestService starts the ledger service on a loopback port.
func newTestService(t testing.TB, opts StoreOptions) (*Store, *httptest.Server) {
	t.Helper()
	s, err := OpenStore(filepath.Join(t.TempDir(), "ledger.log"), opts)
	require.NoError(t, err)
	srv := httptest.NewServer(NewService(s))
	t.Cleanup(func() {
		srv.Close()
		s.Close()
	})
	return s, srv
}

func postBody(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url+"/records", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

const okRecord = `{"id":"r1","t_us":5,"kind":"charge","order_id":"o-1","amount_cents":4999}`

func TestServicePost(t *testing.T) {
	big := "[" + strings.Repeat(okRecord+",", MaxBatch) + okRecord + "]"
	huge := `{"id":"r1","kind":"charge","order_id":"o","amount_cents":1,"detail":"` + strings.Repeat("x", MaxBodyBytes) + `"}`
	tests := []struct {
		name   string
		body   string
		status int
		reason string // in the error body, or the stored response
		stored int
	}{
		{"one record", okRecord, 200, `{"stored":[{"id":"r1","n":1}]}`, 1},
		{"array", `[` + okRecord + `,{"id":"r2","kind":"session_opened","session":"s","client":"c"}]`, 200, `"n":2`, 2},
		{"retried id stored once", `[` + okRecord + `,` + okRecord + `]`, 200, `"duplicate":true`, 1},
		{"invalid record", `{"id":"r1","kind":"charge","order_id":"o-1"}`, 400, "amount_cents must be positive", 0},
		{"one bad record in a batch", `[` + okRecord + `,{"id":"r2","kind":"event_emitted","session":"s"}]`, 400, "record 1: event_emitted", 0},
		{"unknown field", `{"id":"r1","kind":"charge","order_id":"o","amount_cents":1,"colour":"red"}`, 400, `unknown field \"colour\"`, 0},
		{"wrong type", `{"id":"r1","kind":"charge","order_id":"o","amount_cents":"1"}`, 400, "malformed JSON", 0},
		{"trailing data", okRecord + `{}`, 400, "data after the record", 0},
		{"empty body", ``, 400, "JSON record or a JSON array", 0},
		{"null", `null`, 400, "JSON record or a JSON array", 0},
		{"empty array", `[]`, 400, "no records", 0},
		{"truncated", `[` + okRecord, 400, "malformed JSON", 0},
		{"too many records", big, 400, "at most 10000 per request", 0},
		{"too large", huge, 413, "body larger than", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := newTestService(t, StoreOptions{NoSync: true})
			status, body := postBody(t, srv.URL, tc.body)
			assert.Equal(t, tc.status, status, body)
			assert.Contains(t, body, tc.reason)
			assert.Equal(t, tc.stored, s.Len())
			if status != 200 {
				var e errorResponse
				require.NoError(t, json.Unmarshal([]byte(body), &e), "errors are JSON")
				assert.NotEmpty(t, e.Error)
			}
		})
	}
}

func TestServiceExportHealthAndMethods(t *testing.T) {
	_, srv := newTestService(t, StoreOptions{NoSync: true})
	status, _ := postBody(t, srv.URL, `[`+okRecord+`,{"id":"r2","n":99,"kind":"session_opened","session":"s"}]`)
	require.Equal(t, 200, status)

	res, err := http.Get(srv.URL + "/records")
	require.NoError(t, err)
	defer res.Body.Close()
	assert.Equal(t, "application/jsonl", res.Header.Get("Content-Type"))
	recs, err := ReadLedger(res.Body)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, int64(2), recs[1].N, "the ledger assigns n; a sent n is ignored")

	res, err = http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, 200, res.StatusCode)

	req, err := http.NewRequest(http.MethodDelete, srv.URL+"/records", nil)
	require.NoError(t, err)
	res, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, res.StatusCode)
}

func TestServiceAnswers503WhenStoreClosed(t *testing.T) {
	s, srv := newTestService(t, StoreOptions{NoSync: true})
	require.NoError(t, s.Close())
	status, body := postBody(t, srv.URL, okRecord)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body, "closed")
}

func TestServeStopsOnCancel(t *testing.T) {
	s, err := OpenStore(filepath.Join(t.TempDir(), "ledger.log"), StoreOptions{NoSync: true})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s) }()

	c := NewClient(fmt.Sprintf("http://%s", ln.Addr()))
	require.NoError(t, c.Record(ctx, charge("a", "o")))
	cancel()
	require.NoError(t, <-done)
	_, err = net.Dial("tcp", ln.Addr().String())
	require.Error(t, err, "the listener is closed after shutdown")
}

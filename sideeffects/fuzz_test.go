package sideeffects

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzServicePost sends arbitrary bodies to POST /records: the service never
// panics and never answers 5xx, a refused body stores nothing, and an
// accepted one stores each new id once.
func FuzzServicePost(f *testing.F) {
	for _, seed := range []string{
		okRecord,
		`[` + okRecord + `,` + okRecord + `]`,
		`{"id":"e","kind":"event_emitted","session":"s","event_id":3,"seq":1}`,
		`{"id":"x","kind":"charge"}`,
		`[{"id":"a","kind":"session_opened","session":"s"},null]`,
		`{"id":"a","kind":"session_opened","session":"s"} {}`,
		`[]`, `{}`, `null`, `"text"`, `[[[`, ``,
		`{"id":"a","kind":"session_opened","session":"s","t_us":-1}`,
		`{"id":"a","kind":"session_opened","session":"s","t_us":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	// A body as the client's group commit builds it.
	g1, err := newGroup(context.Background(), []Record{charge("a", "o-1")})
	require.NoError(f, err)
	g2, err := newGroup(context.Background(), []Record{charge("b", "o-2"), charge("a", "o-1")})
	require.NoError(f, err)
	f.Add(arrayBody([]*group{g1, g2}))
	s, err := OpenStore(filepath.Join(f.TempDir(), "ledger.log"), StoreOptions{NoSync: true})
	require.NoError(f, err)
	f.Cleanup(func() { s.Close() })
	h := NewService(s)
	f.Fuzz(func(t *testing.T, body []byte) {
		before := s.Len()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/records", bytes.NewReader(body)))
		require.Less(t, w.Code, 500, w.Body.String())
		if w.Code != http.StatusOK {
			require.Equal(t, before, s.Len(), "a refused body stores nothing")
			var e errorResponse
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &e))
			require.NotEmpty(t, e.Error)
			return
		}
		var resp postResponse
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &resp))
		fresh := 0
		for _, st := range resp.Stored {
			assert.Positive(t, st.N)
			if !st.Duplicate {
				fresh++
			}
		}
		require.Equal(t, before+fresh, s.Len())
	})
}

// FuzzReadLedger parses arbitrary files as ledger.jsonl: it never panics,
// and whatever it accepts is valid and written back the same way.
func FuzzReadLedger(f *testing.F) {
	f.Add([]byte(okRecord + "\n"))
	f.Add([]byte(okRecord + "\n" + `{"id":"b","n":2,"t_`))
	f.Add([]byte("\n\n{oops\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := ReadLedger(bytes.NewReader(data))
		if err != nil {
			return
		}
		for i := range recs {
			require.NoError(t, recs[i].Validate())
		}
		var buf bytes.Buffer
		require.NoError(t, WriteLedger(&buf, recs))
		again, err := ReadLedger(&buf)
		require.NoError(t, err)
		require.Equal(t, recs, again)
	})
}

// FuzzGroupCommitBody builds the body of a shared request from arbitrary
// records, as the client's group commit does, and parses it as the service
// does: every record the client would send arrives, in order, as the same
// record a request of its own would carry.
func FuzzGroupCommitBody(f *testing.F) {
	f.Add("a", "s", "detail", int64(3), uint8(2))
	f.Add("id\u2028", "sess\"ion", `{"x":[1,2]}`, int64(1), uint8(5))
	f.Add("\xff\xfe", "s", "", int64(9), uint8(1))
	f.Fuzz(func(t *testing.T, id, session, detail string, seq int64, groups uint8) {
		var batch []*group
		var want []Record
		for g := range int(groups%4) + 1 {
			var recs []Record
			for i := range g + 1 {
				r := Record{ID: fmt.Sprintf("%s-%d-%d", id, g, i), Kind: KindEventEmitted, Session: session, Seq: seq, Detail: detail}
				if r.Validate() != nil {
					return // refused before it is queued
				}
				recs = append(recs, r)
			}
			grp, err := newGroup(context.Background(), recs)
			require.NoError(t, err)
			batch = append(batch, grp)
			for _, l := range grp.lines {
				var alone Record // what a request of its own would carry
				require.NoError(t, json.Unmarshal(l, &alone))
				want = append(want, alone)
			}
		}
		got, err := decodeRecords(bytes.NewReader(arrayBody(batch)))
		require.NoError(t, err)
		require.Equal(t, want, got)
	})
}

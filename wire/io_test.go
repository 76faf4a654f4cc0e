package wire

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
)

func float(v float64) *float64 { return &v }

func TestWriterNumbersAndReadRoundTrips(t *testing.T) {
	path := filepath.Join(t.TempDir(), File)
	w, err := Create(path)
	require.NoError(t, err)
	recs := []Record{
		{TUS: 10, Edge: EdgeClient, Conn: 1, Kind: KindOpen, Peer: "127.0.0.1:5555"},
		{TUS: 20, Edge: EdgeServer, Conn: 1, Kind: KindRequest, Exchange: 1, Method: "POST", Path: "/mcp",
			Header:   &Header{SessionID: "abc", ProtocolVersion: "2025-11-25", MCPMethod: "tools/call", MCPName: "charge"},
			Messages: []Message{{ID: "2", Method: "tools/call", Tool: "charge", Args: json.RawMessage(`{"order_id":"c1-1"}`), ArgsDigest: "ff"}}},
		{TUS: 30, Edge: EdgeServer, Conn: 1, Kind: KindEvent, Exchange: 1, EventID: "7",
			Messages: []Message{{Method: "notifications/progress", ProgressToken: "2", Progress: float(1), Total: float(5)}}},
		{TUS: 40, Edge: EdgeClient, Conn: 1, Kind: KindClose, End: EndRST, By: SideServer, BytesUp: 300, BytesDown: 900},
	}
	for i := range recs {
		n, err := w.Write(&recs[i])
		require.NoError(t, err)
		assert.Equal(t, int64(i+1), n)
	}
	require.NoError(t, w.Close())
	require.NoError(t, w.Close(), "Close is idempotent")

	got, err := Load(path)
	require.NoError(t, err)
	assert.Equal(t, recs, got)

	again := filepath.Join(t.TempDir(), File)
	require.NoError(t, Save(again, got))
	back, err := Load(again)
	require.NoError(t, err)
	assert.Equal(t, recs, back)
}

func TestWriterConcurrentWritesGetDistinctNumbers(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, err := w.Write(&Record{Edge: EdgeClient, Kind: KindComment})
				assert.NoError(t, err)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Flush())
	recs, err := Read(&buf)
	require.NoError(t, err)
	require.Len(t, recs, 800)
	seen := map[int64]bool{}
	for _, r := range recs {
		assert.False(t, seen[r.N], "number %d given twice", r.N)
		seen[r.N] = true
	}
}

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    int
		wantErr string
	}{
		{name: "torn last line is dropped", in: `{"n":1,"edge":"client","kind":"open"}` + "\n" + `{"n":2,"ed`, want: 1},
		{name: "unknown kind", in: `{"n":1,"edge":"client","kind":"nope"}` + "\n", wantErr: `wire: line 1: unknown kind "nope"`},
		{name: "malformed line", in: "{}\nnot json\n" + `{"n":1,"kind":"open"}` + "\n", wantErr: "wire: line 1: unknown kind"},
		{name: "blank lines", in: "\n\n" + `{"n":1,"kind":"close"}` + "\n\n", want: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Len(t, got, tc.want)
		})
	}
}

// TestReadDamagedFiles reads, with Read and with Merge, the damaged files
// every reader of chaosrun's JSON-lines files reads alike
// (internal/jsonl/jsonltest).
func TestReadDamagedFiles(t *testing.T) {
	const rec = `{"n":1,"t_us":5,"edge":"client","conn":1,"kind":"open"}`
	for _, tc := range jsonltest.Cases {
		recs, err := Read(strings.NewReader(tc.Input(rec)))
		assert.NoError(t, tc.Check(len(recs), err), "Read")
		var out bytes.Buffer
		err = Merge(&out, strings.NewReader(tc.Input(rec)))
		assert.NoError(t, tc.Check(strings.Count(out.String(), "\n"), err), "Merge")
	}
}

func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"n":1,"t_us":5,"edge":"server","conn":1,"kind":"request","x":1,"messages":[{"id":"1","method":"initialize"}]}` + "\n"))
	f.Add([]byte(`{"n":1,"kind":"event","messages":[{"progress":1e308}]}` + "\n{"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, r := range recs {
			require.True(t, r.Kind.Valid())
		}
		// What was read writes back and reads the same.
		var buf bytes.Buffer
		w := NewWriter(&buf)
		for i := range recs {
			n := recs[i].N
			_, err := w.Write(&recs[i])
			require.NoError(t, err)
			recs[i].N = n
		}
		require.NoError(t, w.Flush())
		back, err := Read(&buf)
		require.NoError(t, err)
		require.Len(t, back, len(recs))
	})
}

func TestWriterWritesWhatMarshalWrites(t *testing.T) {
	recs := []Record{
		{TUS: 1, Edge: EdgeServer, Conn: 2, Kind: KindEvent, EventID: "<7>", Messages: []Message{{Method: "notifications/progress", Progress: float(0.5)}}},
		{Kind: KindResponse, Status: 410, ErrorBody: "gone & <lost>\xff", Header: &Header{ContentType: "text/plain"}},
		{Kind: KindRequest, Messages: []Message{{ID: "1", Args: json.RawMessage(` {"a": [1, 2]} `)}}},
	}
	var buf bytes.Buffer
	w := NewWriter(&buf)
	var want bytes.Buffer
	for i := range recs {
		_, err := w.Write(&recs[i])
		require.NoError(t, err)
		b, err := json.Marshal(&recs[i])
		require.NoError(t, err)
		want.Write(append(b, '\n'))
	}
	require.NoError(t, w.Flush())
	assert.Equal(t, want.String(), buf.String())
}

func BenchmarkWriterWrite(b *testing.B) {
	w := NewWriter(io.Discard)
	r := Record{TUS: 123456789, Edge: EdgeServer, Conn: 3, Kind: KindEvent, Exchange: 2, EventID: "17", Size: 120,
		Messages: []Message{{Method: "notifications/progress", ProgressToken: "c1-1", Progress: float(5), Total: float(1000)}}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(&r); err != nil {
			b.Fatal(err)
		}
	}
}

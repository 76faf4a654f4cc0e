package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShareNumbersNeverMeet(t *testing.T) {
	tests := []struct {
		name  string
		share Share
		want  []int64
	}{
		{"the only writer", Share{}, []int64{1, 2, 3}},
		{"one of one", Share{Index: 1, Of: 1}, []int64{1, 2, 3}},
		{"first of three", Share{Index: 1, Of: 3}, []int64{1, 4, 7}},
		{"third of three", Share{Index: 3, Of: 3}, []int64{3, 6, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.True(t, tc.share.Valid())
			var got []int64
			for k := int64(1); k <= 3; k++ {
				got = append(got, tc.share.Nth(k))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	assert.False(t, Share{Index: 0, Of: 2}.Valid())
	assert.False(t, Share{Index: 3, Of: 2}.Valid())
}

func TestShareWriterNumbersItsRecords(t *testing.T) {
	var buf bytes.Buffer
	w := NewShareWriter(&buf, Share{Index: 2, Of: 4})
	for range 3 {
		_, err := w.Write(&Record{Edge: EdgeClient, Conn: 2, Kind: KindOpen})
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	recs, err := Read(&buf)
	require.NoError(t, err)
	require.Len(t, recs, 3)
	assert.Equal(t, []int64{2, 6, 10}, []int64{recs[0].N, recs[1].N, recs[2].N})
}

func TestMergeOrdersByTimeKeepingEachFilesOrderAndNumbers(t *testing.T) {
	a := `{"n":1,"t_us":10,"edge":"client","conn":1,"kind":"open"}
{"n":3,"t_us":30,"edge":"client","conn":1,"kind":"close"}
{"n":5,"t_us":25,"edge":"server","conn":1,"kind":"close"}
`
	b := `{"n":2,"t_us":20,"edge":"client","conn":2,"kind":"open"}

{"n":4,"t_us":30,"edge":"client","conn":2,"kind":"close"}
{"n":6,"t_us":40,"edge":"client","conn":2,"kind":"op`
	var out bytes.Buffer
	require.NoError(t, Merge(&out, strings.NewReader(a), strings.NewReader(b)))
	recs, err := Read(&out)
	require.NoError(t, err)
	var ns []int64
	for _, r := range recs {
		ns = append(ns, r.N)
	}
	assert.Equal(t, []int64{1, 2, 3, 5, 4}, ns,
		"by time, the first file first on a tie; a file's own order kept (5 after 3); the torn last line dropped")
}

func TestMergeNamesTheBadLine(t *testing.T) {
	good := `{"n":1,"t_us":10,"edge":"client","conn":1,"kind":"open"}` + "\n"
	bad := good + `{"n":3,"t_us":30,"edge":"client","conn":1,"kind":"bogus"}` + "\n"
	err := Merge(&bytes.Buffer{}, strings.NewReader(good), strings.NewReader(bad))
	assert.ErrorContains(t, err, `source 2, line 2: unknown kind "bogus"`)
	err = Merge(&bytes.Buffer{}, strings.NewReader("{\n"+good))
	assert.ErrorContains(t, err, "source 1, line 1")
}

func TestMergeOfOneFileCopiesIt(t *testing.T) {
	in := `{"n":1,"t_us":10,"edge":"client","conn":1,"kind":"open"}` + "\n" + `{"n":2,"t_us":5,"edge":"server","conn":1,"kind":"open"}` + "\n"
	var out bytes.Buffer
	require.NoError(t, Merge(&out, strings.NewReader(in)))
	assert.Equal(t, in, out.String())
}

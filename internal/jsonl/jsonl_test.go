package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/internal/jsonl/jsonltest"
)

func TestEach(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []int // the values parsed
		lines   []int // their line numbers
		wantErr string
	}{
		{name: "empty", in: ""},
		{name: "lines", in: "1\n2\n3\n", want: []int{1, 2, 3}, lines: []int{1, 2, 3}},
		{name: "blank lines skipped, numbers kept", in: "1\n\n  \n4\n", want: []int{1, 4}, lines: []int{1, 4}},
		{name: "last line without newline parses", in: "1\n2", want: []int{1, 2}, lines: []int{1, 2}},
		{name: "torn last line dropped", in: "1\n2\n{\"a", want: []int{1, 2}, lines: []int{1, 2}},
		{name: "bad line in the middle", in: "1\nx\n3\n", want: []int{1}, lines: []int{1}, wantErr: "line 2:"},
		{name: "bad last line with newline", in: "1\nx\n", want: []int{1}, lines: []int{1}, wantErr: "line 2:"},
		{name: "whole value that does not parse, last", in: "1\n\"x\"", want: []int{1}, lines: []int{1}, wantErr: "line 2:"},
		{name: "too long", in: "1\n" + strings.Repeat("9", 40) + "\n", want: []int{1}, lines: []int{1}, wantErr: "line 2: line too long"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got, lines []int
			err := Each(strings.NewReader(tc.in), 32, func(line int, b []byte) error {
				var v int
				if err := json.Unmarshal(b, &v); err != nil {
					return err
				}
				got, lines = append(got, v), append(lines, line)
				return nil
			})
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.lines, lines)
		})
	}
}

// object parses a line as a record: a JSON object.
func object(_ int, b []byte) error {
	var m map[string]any
	return json.Unmarshal(b, &m)
}

// TestCases reads the table every reader of these files must agree with.
func TestCases(t *testing.T) {
	for _, tc := range jsonltest.Cases {
		t.Run(tc.Name, func(t *testing.T) {
			kept := 0
			err := Each(strings.NewReader(tc.Input(`{"n":1}`)), 1<<10, func(line int, b []byte) error {
				if err := object(line, b); err != nil {
					return err
				}
				kept++
				return nil
			})
			require.NoError(t, tc.Check(kept, err))
		})
	}
}

func TestReaderNext(t *testing.T) {
	r := NewReader(strings.NewReader("{\"a\":1}\n\n{\"a\":2}\n{\"a"), 1<<10)
	var lines []int
	for {
		err := r.Next(func(line int, b []byte) error {
			lines = append(lines, line)
			return object(line, b)
		})
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
	}
	assert.Equal(t, []int{1, 3, 4}, lines, "the torn line 4 was offered to parse, then dropped")
	assert.Equal(t, io.EOF, r.Next(object), "and the end stays the end")
}

func TestOpenAppend(t *testing.T) {
	tests := []struct {
		name, before, after string
	}{
		{"a new file", "", `{"n":9}` + "\n"},
		{"a whole file", `{"n":1}` + "\n", `{"n":1}` + "\n" + `{"n":9}` + "\n"},
		{"a torn last line cut off", `{"n":1}` + "\n" + `{"n":2,"t_`, `{"n":1}` + "\n" + `{"n":9}` + "\n"},
		{"a torn first line cut off", `{"n":1,"t_`, `{"n":9}` + "\n"},
		{"zeros cut off", `{"n":1}` + "\n\x00\x00\x00", `{"n":1}` + "\n" + `{"n":9}` + "\n"},
		{"white space cut off", `{"n":1}` + "\n  ", `{"n":1}` + "\n" + `{"n":9}` + "\n"},
		{"a whole last line ended", `{"n":1}` + "\n" + `{"n":2}`, `{"n":1}` + "\n" + `{"n":2}` + "\n" + `{"n":9}` + "\n"},
		{"a long torn line cut off", `{"n":1}` + "\n" + `{"x":"` + strings.Repeat("y", 200<<10), `{"n":1}` + "\n" + `{"n":9}` + "\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "f.jsonl")
			if tc.before != "" {
				require.NoError(t, os.WriteFile(path, []byte(tc.before), 0o644))
			}
			var before bytes.Buffer
			f, err := OpenAppend(path)
			require.NoError(t, err)
			_, err = io.Copy(&before, f)
			require.NoError(t, err, "the file reads from its start")
			_, err = f.Write([]byte(`{"n":9}` + "\n"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.after, string(got))
			assert.Equal(t, strings.TrimSuffix(tc.after, `{"n":9}`+"\n"), before.String())
			assert.NoError(t, Each(bytes.NewReader(got), 1<<20, object), "what was appended reads as a record")
		})
	}
	_, err := OpenAppend(filepath.Join(t.TempDir(), "missing", "f.jsonl"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// FuzzEach checks Each against the rule as the package doc states it, on
// lines split the plain way: every line up to a bad one is read in order
// with its number, blank lines skipped; a bad line is an error naming it,
// unless it is the last, has no newline and is no whole JSON value.
func FuzzEach(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n\n{\"a\":2}\n{\"a"), 16)
	f.Add([]byte("{}\n[1]"), 64)
	f.Add([]byte("{}\n\x00\x00\n{}"), 8)
	f.Add([]byte(" {} \r\n"+strings.Repeat(" ", 40)+"\n"), 32)
	f.Fuzz(func(t *testing.T, in []byte, maxLine int) {
		if maxLine < 1 || maxLine > 1<<16 {
			return
		}
		var lines []int
		err := Each(bytes.NewReader(in), maxLine, func(line int, b []byte) error {
			if err := object(line, b); err != nil {
				return err
			}
			lines = append(lines, line)
			return nil
		})
		wantLines, wantErrLine := byTheRule(in, maxLine)
		assert.Equal(t, wantLines, lines)
		if wantErrLine == 0 {
			require.NoError(t, err)
			return
		}
		require.ErrorContains(t, err, fmt.Sprintf("line %d: ", wantErrLine))
	})
}

// byTheRule returns the numbers of the lines the rule reads from in, and
// the line of its error, 0 for none.
func byTheRule(in []byte, maxLine int) (lines []int, errLine int) {
	segs := bytes.Split(in, []byte{'\n'})
	for i, seg := range segs {
		last := i == len(segs)-1 // the bytes after the final newline
		if last && len(seg) == 0 {
			break
		}
		size := len(seg)
		if !last {
			size++
		}
		if size > maxLine {
			return lines, i + 1
		}
		b := bytes.TrimSpace(seg)
		if len(b) == 0 {
			continue
		}
		if err := object(i+1, b); err != nil {
			if last && !json.Valid(b) {
				return lines, 0
			}
			return lines, i + 1
		}
		lines = append(lines, i+1)
	}
	return lines, 0
}

func TestReadAndLoad(t *testing.T) {
	parse := func(b []byte) (m map[string]any, err error) { return m, json.Unmarshal(b, &m) }
	read := func(r io.Reader) ([]map[string]any, error) { return Read(r, 1<<10, parse) }
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.jsonl"), filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(good, []byte("{\"a\":1}\n{\"a\":2}\n{\"a"), 0o644))
	require.NoError(t, os.WriteFile(bad, []byte("{\"a\":1}\n{oops\n"), 0o644))

	recs, err := Load(good, read)
	require.NoError(t, err)
	assert.Equal(t, []map[string]any{{"a": 1.0}, {"a": 2.0}}, recs)
	_, err = Load(bad, read)
	assert.ErrorContains(t, err, bad+": line 2: ")
	_, err = Load(filepath.Join(dir, "missing.jsonl"), read)
	assert.ErrorIs(t, err, os.ErrNotExist)
}

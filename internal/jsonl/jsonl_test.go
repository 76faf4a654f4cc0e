package jsonl

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

package agent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAwaitURL(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		ctx    context.Context
		line   string // sent when not ""
		exited bool
		want   string // the error, or the line when ok
		ok     bool
	}{
		{"printed", context.Background(), "http://127.0.0.1:1", false, "http://127.0.0.1:1", true},
		{"exited first", context.Background(), "", true, "agent exited before it was ready (see a.log)", false},
		{"silent", context.Background(), "", false, "agent printed no URL within 20ms (see a.log)", false},
		{"ctx ended", cancelled, "", false, context.Canceled.Error(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			line, exited := make(chan string, 1), make(chan struct{})
			if tc.line != "" {
				line <- tc.line
			}
			if tc.exited {
				close(exited)
			}
			got, err := AwaitURL(tc.ctx, line, exited, 20*time.Millisecond, "a.log")
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			require.EqualError(t, err, tc.want)
		})
	}
}

package mcp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHasMediaType(t *testing.T) {
	tests := []struct {
		contentType string
		want        bool
	}{
		{"text/event-stream", true},
		{"text/event-stream; charset=utf-8", true},
		{" TEXT/Event-Stream ;charset=utf-8", true},
		{"text/event-streams", false},
		{"text/event", false},
		{"application/json", false},
		{"", false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, HasMediaType(tc.contentType, ContentTypeSSE), "%q", tc.contentType)
	}
}

package roles

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestEndpointOfDealsClientsInTurn(t *testing.T) {
	two := []string{"http://a/mcp", "http://b/mcp"}
	tests := []struct {
		name      string
		endpoints []string
		client    int
		want      string
	}{
		{"no endpoint", nil, 3, ""},
		{"the only one", two[:1], 7, "http://a/mcp"},
		{"the first client, the first proxy", two, 0, "http://a/mcp"},
		{"the second client, the second proxy", two, 1, "http://b/mcp"},
		{"the third client, the first again", two, 2, "http://a/mcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, endpointOf(tc.endpoints, tc.client))
		})
	}
}

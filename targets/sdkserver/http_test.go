package sdkserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chaosrun/chaosrun/sideeffects"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

func TestFrontLabelsToolsCalls(t *testing.T) {
	tests := []struct {
		name, body, spoof, want string
	}{
		{"numeric id", `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{}}`, "", "12"},
		{"string id", `{"jsonrpc":"2.0","id":"r-1","method":"tools/call","params":{}}`, "", "r-1"},
		{"spoofed by the client", `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, "999", "3"},
		{"other method", `{"jsonrpc":"2.0","id":3,"method":"ping"}`, "999", ""},
		{"notification", `{"jsonrpc":"2.0","method":"tools/call"}`, "", ""},
		{"batch", `[{"jsonrpc":"2.0","id":3,"method":"tools/call"}]`, "", ""},
		{"not json", `tools/call`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var gotID, gotBody string
			h := Front(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				gotID = r.Header.Get(RequestIDHeader)
				b, err := io.ReadAll(r.Body)
				require.NoError(t, err)
				gotBody = string(b)
			}), NewHost(Config{}))
			r := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(tc.body))
			if tc.spoof != "" {
				r.Header.Set(RequestIDHeader, tc.spoof)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			assert.Equal(t, tc.want, gotID)
			assert.Equal(t, tc.body, gotBody, "the SDK reads the body untouched")
		})
	}
}

func TestFrontPassesLargeBodiesUntouched(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"pad":"` +
		strings.Repeat("x", maxPeekBytes) + `"}}}`
	var got int
	h := Front(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = len(b)
		assert.Empty(t, r.Header.Get(RequestIDHeader))
	}), NewHost(Config{}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body)))
	assert.Equal(t, len(body), got)
}

func TestFrontNotesDeletes(t *testing.T) {
	m := sideeffects.NewMemory()
	host := NewHost(Config{Recorder: m})
	host.SessionOpened("s1", "alice", "v")
	h := Front(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), host)
	for _, sid := range []string{"s1", "unknown"} {
		r := httptest.NewRequest(http.MethodDelete, "/mcp", nil)
		r.Header.Set(mcp.HeaderSessionID, sid)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	host.SessionClosed("s1", "expired")
	assert.Equal(t, "deleted", m.Records()[1].Reason)
}

func TestMountControl(t *testing.T) {
	host := NewHost(Config{})
	host.SessionOpened("a", "alice", "v")
	host.SessionOpened("b", "bob", "v")
	var expired []string
	mux := http.NewServeMux()
	MountControl(mux, Control{
		Target: "t", Version: "v1", Host: host,
		Expire: func(session string) error {
			switch session {
			case "a", "b":
				expired = append(expired, session)
				return nil
			case "broken":
				return errors.New("broken")
			}
			return ErrUnknownSession
		},
		TerminateUnsupported: "no close event",
	})
	tests := []struct {
		method, path string
		status       int
		want         map[string]any
		expired      []string
	}{
		{http.MethodGet, "/control/healthz", 200, map[string]any{"ok": true, "target": "t"}, nil},
		{http.MethodGet, "/control/status", 200, map[string]any{"target": "t", "sdk_version": "v1", "inflight_calls": 0.0, "sessions": 2.0}, nil},
		{http.MethodPost, "/control/expire?session=a", 200, map[string]any{"sessions": []any{"a"}}, []string{"a"}},
		{http.MethodPost, "/control/expire", 200, map[string]any{"sessions": []any{"a", "b"}}, []string{"a", "b"}},
		{http.MethodPost, "/control/expire?session=gone", 404, map[string]any{"error": "session_not_found", "message": "no such session"}, nil},
		{http.MethodPost, "/control/expire?session=broken", 500, map[string]any{"error": "internal", "message": "broken"}, nil},
		{http.MethodPost, "/control/terminate?session=a", 501, map[string]any{"error": "unsupported", "message": "no close event"}, nil},
		{http.MethodPost, "/control/terminate", 501, map[string]any{"error": "unsupported", "message": "no close event"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			expired = nil
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			assert.Equal(t, tc.status, rec.Code)
			assert.Equal(t, mcp.ContentTypeJSON, rec.Header().Get("Content-Type"))
			var got map[string]any
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.expired, expired)
		})
	}
}

// TestFrontWatchesModernCallStreams: a 2026-07-28 tools/call is labelled
// with the stream the host watches while the request is served, and only
// then; a label sent by a client is removed.
func TestFrontWatchesModernCallStreams(t *testing.T) {
	const call = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}`
	tests := []struct {
		name, version string
		watched       bool
	}{
		{"2026-07-28", mcp.Version20260728, true},
		{"2025-11-25", mcp.Version20251125, false},
		{"no version", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := NewHost(Config{})
			var label string
			var during <-chan struct{}
			h := Front(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				label = r.Header.Get(StreamHeader)
				during = host.stream(label)
			}), host)
			ctx, cancel := context.WithCancel(context.Background()) // as a server's request has
			defer cancel()
			r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/mcp", strings.NewReader(call))
			r.Header.Set(StreamHeader, "spoofed")
			if tc.version != "" {
				r.Header.Set(mcp.HeaderProtocolVersion, tc.version)
			}
			h.ServeHTTP(httptest.NewRecorder(), r)
			assert.NotEqual(t, "spoofed", label)
			assert.Equal(t, tc.watched, label != "")
			assert.Equal(t, tc.watched, during != nil, "watched while served")
			assert.Nil(t, host.stream(label), "forgotten once served")
		})
	}
}

package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxControlAnswer bounds how much of a control answer is read.
const maxControlAnswer = 1 << 20

// control posts a session action to the server's control endpoint and
// describes the sessions it acted on.
func (r *run) control(ctx context.Context, action, verb string) (heal, string, error) {
	body, err := r.post(ctx, action)
	if err != nil {
		return nil, "", err
	}
	ids, err := parseSessions(body)
	if err != nil {
		return nil, "", fmt.Errorf("control %s: %w", action, err)
	}
	return nil, sessionsDetail(verb, ids), nil
}

// post posts to {control}/control/<action> and returns the 2xx answer.
func (r *run) post(ctx context.Context, action string) ([]byte, error) {
	if r.env.ControlURL == "" {
		return nil, errors.New("no server control URL in this run")
	}
	url := strings.TrimSuffix(r.env.ControlURL, "/") + "/control/" + action
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", action, err)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", action, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxControlAnswer))
	if err != nil {
		return nil, fmt.Errorf("control %s: %w", action, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("control %s: %s: %s", action, resp.Status, bytes.TrimSpace(body[:min(len(body), 200)]))
	}
	return body, nil
}

// parseSessions reads a control answer, {"sessions":[...]}. Session ids are
// strings; any other element is kept as its compact JSON.
func parseSessions(b []byte) ([]string, error) {
	var v struct {
		Sessions *[]json.RawMessage `json:"sessions"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("answer is not {\"sessions\":[...]}: %w", err)
	}
	if v.Sessions == nil {
		return nil, errors.New(`answer has no "sessions" list`)
	}
	ids := make([]string, 0, len(*v.Sessions))
	for _, raw := range *v.Sessions {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			ids = append(ids, s)
			continue
		}
		var c bytes.Buffer
		if json.Compact(&c, raw) != nil {
			return nil, fmt.Errorf("bad session %s", raw)
		}
		ids = append(ids, c.String())
	}
	return ids, nil
}

package agentside

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/chaosrun/chaosrun/internal/untar"
)

// Client is the runner's side of a keeper.
type Client struct {
	base string // the keeper's URL
	hc   *http.Client
}

// NewClient returns a client of the keeper at base (http://host:port).
func NewClient(base string) *Client {
	return &Client{base: strings.TrimRight(base, "/"), hc: &http.Client{}}
}

// MakeDir makes the folder rel of the experiment.
func (c *Client) MakeDir(ctx context.Context, rel string) error {
	return c.do(ctx, http.MethodPut, "/dirs/"+rel, nil, nil)
}

// WriteFile writes b to the file rel of the experiment.
func (c *Client) WriteFile(ctx context.Context, rel string, b []byte) error {
	return c.do(ctx, http.MethodPut, "/files/"+rel, bytes.NewReader(b), nil)
}

// CopyFile copies the file rel of the experiment to dst.
func (c *Client) CopyFile(ctx context.Context, rel, dst string) error {
	return c.do(ctx, http.MethodGet, "/files/"+rel, nil, func(body io.Reader) error {
		return untar.WriteFile(dst, body)
	})
}

// CopyDir copies the folder rel of the experiment into dir: its folders
// and regular files, nothing outside dir.
func (c *Client) CopyDir(ctx context.Context, rel, dir string) error {
	return c.do(ctx, http.MethodGet, "/tar/"+rel, nil, func(body io.Reader) error {
		return untar.Extract(tar.NewReader(body), "", dir)
	})
}

// Remove removes the experiment's folder.
func (c *Client) Remove(ctx context.Context) error {
	return c.do(ctx, http.MethodDelete, "/", nil, nil)
}

func (c *Client) do(ctx context.Context, method, p string, body io.Reader, read func(io.Reader) error) error {
	if _, rel, _ := strings.Cut(strings.TrimPrefix(p, "/"), "/"); rel != "" && !filepath.IsLocal(rel) {
		return fmt.Errorf("keeper: %q is not a path inside the experiment's folder", rel)
	}
	u := c.base + (&url.URL{Path: p}).EscapedPath()
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("keeper: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("keeper: %s %s: %s: %s", method, p, resp.Status, strings.TrimSpace(string(msg)))
	}
	if read == nil {
		return nil
	}
	if err := read(resp.Body); err != nil {
		return fmt.Errorf("keeper: %s %s: %w", method, p, err)
	}
	return nil
}

package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the repository, two folders up from this package.
const root = "../.."

// maxReadme bounds the README: it is the user's guide, and what is
// reference lives in docs/.
const maxReadme = 300

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
)

// anchor is the anchor GitHub gives a heading.
func anchor(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	var b strings.Builder
	for _, r := range h {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		}
	}
	return b.String()
}

func pages(t *testing.T) []string {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, docs...)
}

func TestTheReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	lines := strings.Count(string(b), "\n")
	assert.LessOrEqual(t, lines, maxReadme, "the README is the user's guide; move reference material to docs/")
}

// TestLinksResolve: every relative link of the README and docs/ names a
// file that exists and, with a #fragment into a Markdown file, one of its
// headings.
func TestLinksResolve(t *testing.T) {
	for _, page := range pages(t) {
		b, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			_, err := os.Stat(path)
			if !assert.NoError(t, err, "%s links to %s, which does not exist", page, target) || frag == "" || !strings.HasSuffix(path, ".md") {
				continue
			}
			md, err := os.ReadFile(path)
			require.NoError(t, err)
			var anchors []string
			for _, h := range heading.FindAllStringSubmatch(string(md), -1) {
				anchors = append(anchors, anchor(h[1]))
			}
			assert.Contains(t, anchors, frag, "%s links to %s, which has no such heading", page, target)
		}
	}
}

// TestEveryPageIsReachable: every page of docs/ is linked from the README
// or from the index docs/README.md, which the README links.
func TestEveryPageIsReachable(t *testing.T) {
	linked := map[string]bool{}
	for _, from := range []string{filepath.Join(root, "README.md"), filepath.Join(root, "docs", "README.md")} {
		b, err := os.ReadFile(from)
		require.NoError(t, err)
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			file, _, _ := strings.Cut(m[1], "#")
			linked[filepath.Clean(filepath.Join(filepath.Dir(from), file))] = true
		}
	}
	require.True(t, linked[filepath.Clean(filepath.Join(root, "docs", "README.md"))], "the README links the docs index")
	for _, page := range pages(t)[1:] {
		assert.True(t, linked[filepath.Clean(page)], "%s is linked from neither the README nor docs/README.md", page)
	}
}

package timeline

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
	"strings"
)

// File is the name of an experiment's timeline in its result folder.
const File = "timeline.html"

var (
	//go:embed assets/timeline.js
	script string
	//go:embed assets/timeline.css
	style string
	//go:embed assets/timeline.html.tmpl
	pageSource string

	pageTemplate = template.Must(template.New("timeline").Parse(pageSource))
)

// pageView is what the page template fills in.
type pageView struct {
	Title  string
	Style  template.CSS
	Script template.JS
	// Data is the page's JSON. json.Marshal escapes <, > and &, so no
	// "</script>" can end the element early.
	Data template.JS
	// Records are the record files, one script element each holding the
	// file's JSON lines gzipped and in base64: the page decodes them once it
	// is drawn, so a large run's records do not slow its first drawing.
	Records template.HTML
}

// Write writes x's timeline page to w.
func Write(w io.Writer, x Experiment) error {
	p := build(x)
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("timeline %s: %w", x.Name, err)
	}
	var recs strings.Builder
	for i, lines := range p.Records {
		z, err := gzipBase64(strings.Join(lines, "\n"))
		if err != nil {
			return fmt.Errorf("timeline %s: %w", x.Name, err)
		}
		fmt.Fprintf(&recs, "<script type=\"text/plain\" id=\"records-%d\">%s</script>\n", i, z)
	}
	v := pageView{Title: x.Name + " · chaosrun timeline", Style: template.CSS(style), Script: template.JS(script),
		Data: template.JS(data), Records: template.HTML(recs.String())}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("timeline %s: %w", x.Name, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

func gzipBase64(s string) (string, error) {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := io.WriteString(zw, s); err != nil {
		return "", err
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b.Bytes()), nil
}

// WriteFile writes x's timeline page to path.
func WriteFile(path string, x Experiment) error {
	return writeFile(path, func(w io.Writer) error { return Write(w, x) })
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("timeline: %w", err)
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

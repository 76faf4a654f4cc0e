package timeline

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"os"
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
}

// Write writes x's timeline page to w.
func Write(w io.Writer, x Experiment) error {
	data, err := json.Marshal(build(x))
	if err != nil {
		return fmt.Errorf("timeline %s: %w", x.Name, err)
	}
	v := pageView{Title: x.Name + " · chaosrun timeline", Style: template.CSS(style), Script: template.JS(script), Data: template.JS(data)}
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, v); err != nil {
		return fmt.Errorf("timeline %s: %w", x.Name, err)
	}
	_, err = w.Write(buf.Bytes())
	return err
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

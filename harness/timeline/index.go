package timeline

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"strings"

	"github.com/chaosrun/chaosrun/harness/check"
)

// IndexFile is the name of a run's index page in its result folder.
const IndexFile = "index.html"

var (
	//go:embed assets/index.html.tmpl
	indexSource   string
	indexTemplate = template.Must(template.New("index").Funcs(template.FuncMap{
		"join": strings.Join,
		"secs": func(ms int64) string { return fmt.Sprintf("%.1fs", float64(ms)/1000) },
	}).Parse(indexSource))
)

// Index is a run as its index page lists it.
type Index struct {
	ID      string
	Runtime string
	WallMS  int64
	// Partial says why the run is incomplete; empty when it is whole.
	Partial     string
	Experiments []Entry

	_ struct{} // keyed literals only: the index grows
}

// Entry is one experiment of a run's index.
type Entry struct {
	Name     string
	Expected string
	Met      bool
	Reasons  []string
	Error    string // a harness error: no verdict
	Partial  string
	// Verdict is nil when the harness failed on the experiment.
	Verdict *check.Verdict
	// Timeline is the experiment's timeline page relative to the index,
	// empty when it has none.
	Timeline string

	_ struct{} // keyed literals only: the entry grows
}

type indexView struct {
	Index
	Title string
	Style template.CSS
	Met   int
}

// WriteIndex writes the run's index page to w: one row per experiment with
// its verdict, expectation, violations and key figures, linking to its
// timeline.
func WriteIndex(w io.Writer, x Index) error {
	v := indexView{Index: x, Title: "chaosrun run " + x.ID, Style: template.CSS(style)}
	for _, e := range x.Experiments {
		if e.Met {
			v.Met++
		}
	}
	if err := indexTemplate.Execute(w, v); err != nil {
		return fmt.Errorf("index %s: %w", x.ID, err)
	}
	return nil
}

// WriteIndexFile writes the run's index page to path.
func WriteIndexFile(path string, x Index) error {
	return writeFile(path, func(w io.Writer) error { return WriteIndex(w, x) })
}

package docker

import (
	"bytes"
	"io"
	"strings"
)

// maxURLLine bounds the first line a serving agent prints; longer output
// without a newline is not a URL.
const maxURLLine = 4096

// firstLine sends the first line written to it (without its line ending) to
// line, exactly once, and passes everything after it to rest.
type firstLine struct {
	line chan<- string
	rest io.Writer
	buf  []byte
	sent bool
}

func (w *firstLine) Write(b []byte) (int, error) {
	n := len(b)
	if !w.sent {
		i := bytes.IndexByte(b, '\n')
		if i < 0 && len(w.buf)+len(b) <= maxURLLine {
			w.buf = append(w.buf, b...)
			return n, nil
		}
		if i < 0 {
			i = len(b)
		}
		w.buf = append(w.buf, b[:i]...)
		w.sent = true
		w.line <- strings.TrimRight(string(w.buf), "\r")
		w.buf = nil
		b = b[min(i+1, len(b)):]
	}
	if len(b) == 0 {
		return n, nil
	}
	if _, err := w.rest.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

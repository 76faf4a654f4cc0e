// Package untar writes an archive of an agent's state folder, as a runtime
// copies it out of a container or a pod, into a folder on the runner's
// side: folders and regular files only, and never outside that folder.
package untar

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Extract writes the folders and regular files of tr into dir. With top
// set, every entry must lie under the folder top of the archive (a copy of
// a container's folder names it first), which is left out; with top "",
// entries are relative to dir. Other entry types are skipped, and an entry
// that would lead outside dir is an error.
func Extract(tr *tar.Reader, top, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		rel, ok := relative(hdr.Name, top)
		if !ok {
			return fmt.Errorf("archive entry %q leads outside the folder", hdr.Name)
		}
		if rel == "" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(rel))
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = WriteFile(target, tr)
		}
		if err != nil {
			return err
		}
	}
}

// relative returns name's path below top ("" for top itself), and false
// when it is not below top or not local.
func relative(name, top string) (string, bool) {
	name = path.Clean(name)
	if top != "" {
		if name == top {
			return "", true
		}
		var ok bool
		if name, ok = strings.CutPrefix(name, top+"/"); !ok {
			return "", false
		}
	}
	if name == "." {
		return "", true
	}
	return name, filepath.IsLocal(name)
}

// WriteFile writes r to dst (mode 0644), making its folder first.
func WriteFile(dst string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
